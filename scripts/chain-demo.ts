// npm run chain:demo: a local chain for the chain source to follow (docs/chain-source.md).
// Starts anvil (the tests' node, test/support/anvil.ts) with blocks at the wall clock's
// time, deploys the test asset (tUSD, 6 decimals), an ERC-4626 vault and an ERC-7540 vault (the
// tests' contracts, test/sources/contracts), makes deposits, a withdraw and a redeem request from
// several accounts, writes a sources file and prints how to start a gateway that follows it. Then
// it keeps the chain busy (a block every 2 s, an action every 10 s) until Ctrl-C.
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Address } from 'viem'
import { anvilSkipReason, CHAIN_ID, startAnvil, TestChain } from '../test/support/anvil.js'

const reason = anvilSkipReason({ ci: '' })
if (reason) {
  process.stderr.write(`chain:demo needs anvil: ${reason}\n`)
  process.exit(1)
}

const anvil = await startAnvil(20_000, { realTime: true })
const chain = new TestChain(anvil.url, anvil.accounts)
const [, alice, bob, carol, dave] = anvil.accounts as [Address, Address, Address, Address, Address]
const usd = (x: number) => BigInt(Math.round(x * 1e6))
const shares = (x: number) => BigInt(x) * 10n ** 18n

const { asset, vault, asyncVault } = await chain.deployAll() // blocks 1, 2, 3
await chain.installMulticall3()
await chain.fund(alice, vault, usd(25_000))
await chain.deposit(alice, vault, usd(20_000))
await chain.fund(bob, vault, usd(5_000))
await chain.deposit(bob, vault, usd(5_000))
await chain.donate(vault, usd(180)) // yield without an event
await chain.withdraw(alice, vault, usd(2_500))
await chain.fund(carol, asyncVault, usd(12_000))
await chain.deposit(carol, asyncVault, usd(10_000))
await chain.deposit(carol, asyncVault, usd(1_500), dave)
await chain.requestRedeem(dave, shares(500))

const dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-chain-demo-'))
const file = path.join(dir, 'sources.json')
const metadata = { symbol: 'vgtUSD', base_asset: 'tUSD', base_asset_price_usd: '1', status: 'active', perf_fee_bps: 1000, mgmt_fee_bps: 100 }
await writeFile(
  file,
  `${JSON.stringify(
    {
      chains: { anvil: { chain_id: CHAIN_ID, rpc_url: anvil.url, confirmations: 2, poll_interval_ms: 1000 } },
      vaults: [
        {
          id: 'demo-usd',
          chain: 'anvil',
          address: vault,
          kind: 'erc4626',
          from_block: 2,
          snapshot_interval_ms: 60_000,
          name: 'Demo tUSD (ERC-4626)',
          ...metadata,
          api_endpoint: 'https://example.test/demo-usd',
        },
        {
          id: 'demo-usd-async',
          chain: 'anvil',
          address: asyncVault,
          kind: 'erc7540',
          from_block: 3,
          snapshot_interval_ms: 60_000,
          name: 'Demo tUSD (ERC-7540, asynchronous redeems)',
          ...metadata,
          api_endpoint: 'https://example.test/demo-usd-async',
        },
      ],
    },
    null,
    2,
  )}\n`,
)

const api = 'http://127.0.0.1:4000'
const out = (line = '') => process.stdout.write(`${line}\n`)
out('A local chain to follow is running:')
out(`  anvil           ${anvil.url} (chain id ${CHAIN_ID})`)
out(`  demo-usd        ERC-4626 vault ${vault}`)
out(`  demo-usd-async  ERC-7540 vault ${asyncVault}`)
out(`  asset           tUSD ${asset} (6 decimals)`)
out(`  sources file    ${file}`)
out()
out('Check it, then start a gateway that follows it (in another terminal, in this folder):')
out(`  npx vaultgate sources check ${file}`)
out(`  VAULT_SOURCES_FILE=${file} DATA_DIR=${path.join(dir, 'data')} SEED_DEMO=false npm start`)
out()
out('Then:')
out(`  curl -s ${api}/v1/vaults/demo-usd`)
out(`  curl -s ${api}/v1/users/${alice}/vaults/demo-usd/transactions`)
out(`  curl -s ${api}/v1/users/${dave}/redeems`)
out(`  curl -s ${api}/metrics | grep vaultgate_source_`)
out()
out('A block every 2 s; every 10 s someone deposits, withdraws, donates or has a redeem fulfilled and claimed. Ctrl-C stops the chain.')

// Round-robin activity, so the follower has something to record.
const actions: [string, () => Promise<unknown>][] = [
  [
    'bob deposits 250 tUSD into demo-usd',
    async () => {
      await chain.fund(bob, vault, usd(250))
      await chain.deposit(bob, vault, usd(250))
    },
  ],
  ['a donation of 42 tUSD to demo-usd (yield without an event)', () => chain.donate(vault, usd(42))],
  ["dave's redeem of 500 shares is fulfilled", () => chain.fulfill(dave, shares(500))],
  ['dave claims it', () => chain.claim(dave, shares(500))],
  ['alice withdraws 100 tUSD from demo-usd', () => chain.withdraw(alice, vault, usd(100))],
  ['carol requests a redeem of 200 shares', () => chain.requestRedeem(carol, shares(200))],
]
let next = 0
const blocks = setInterval(() => void chain.test.mine({ blocks: 1 }).catch(() => {}), 2000)
const activity = setInterval(() => {
  const [what, run] = actions[next++ % actions.length]!
  run().then(
    () => out(`  ${new Date().toISOString()}  ${what}`),
    (e: Error) => out(`  ${what}: failed (${e.message.split('\n')[0]})`),
  )
}, 10_000)

const stop = async () => {
  clearInterval(blocks)
  clearInterval(activity)
  await anvil.stop()
  process.exit(0)
}
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())
