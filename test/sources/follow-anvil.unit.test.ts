import { toEventSelector, type Address, type TransactionReceipt } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ImportTransaction } from '../../src/importer/document.js'
import { collectRange, nextRange, type FollowedVault, type VaultProgress } from '../../src/sources/collect.js'
import type { SourceChain } from '../../src/sources/config.js'
import { LogFetcher } from '../../src/sources/logs.js'
import type { BlockRef, VaultSnapshot } from '../../src/sources/mapping.js'
import { ChainReader } from '../../src/sources/reader.js'
import { anvilSkip, anvilSuiteTitle, CHAIN_ID, countingTransport, startAnvil, TestChain, type Anvil } from '../support/anvil.js'

// End to end against a real anvil: real contracts (OpenZeppelin's ERC4626 and the test ERC-7540
// vault over a 6-decimal asset, 18-decimal shares), real transactions from several accounts, and
// the chain source's reader + mapping turning them into the importer's records. Every expected
// amount below was computed by hand from OpenZeppelin's rounding rules (floor on deposit, ceil on
// withdraw, decimals offset 12), not read back from the chain.

const skip = anvilSkip()

const chainConfig = (url: string, multicall3_address?: Address | null): SourceChain => ({
  name: 'anvil',
  chain_id: CHAIN_ID,
  rpc_url: url,
  confirmations: 2,
  poll_interval_ms: 50,
  multicall3_address,
  requests_per_second: 10_000,
  max_block_range: 2000,
})

const iso = (block: number) => new Date((1_767_225_600 + 12 * block) * 1000).toISOString()

const TOPIC = {
  Deposit: toEventSelector('Deposit(address,address,uint256,uint256)'),
  Withdraw: toEventSelector('Withdraw(address,address,address,uint256,uint256)'),
  RedeemRequest: toEventSelector('RedeemRequest(address,address,uint256,address,uint256)'),
}

/** `<chain id>:<tx hash>:<log index>` of the vault's event in a receipt: how ids are expected to look. */
function idOf(receipt: TransactionReceipt, vault: Address, event: keyof typeof TOPIC): string {
  const log = receipt.logs.find((l) => l.address.toLowerCase() === vault && l.topics[0] === TOPIC[event])
  if (!log) throw new Error(`no ${event} of ${vault} in ${receipt.transactionHash}`)
  return `${CHAIN_ID}:${receipt.transactionHash}:${log.logIndex}`
}

interface Followed {
  /** Every version of each transaction, in the order ranges produced them. */
  history: Map<string, ImportTransaction[]>
  /** The final rows after upserting every batch by id (as the importer's writes would). */
  transactions: ImportTransaction[]
  snapshots: VaultSnapshot[]
  warnings: string[]
  progress: Map<string, VaultProgress>
  cursor: BlockRef
}

/** What the follower will do with a database: range after range up to the confirmed head, carrying the progress. */
async function follow(reader: ChainReader, vaults: FollowedVault[], from: bigint, maxBlocks: number): Promise<Followed> {
  const confirmed = (await reader.confirmedHead())!
  const fetcher = new LogFetcher(reader.client, { maxSpan: reader.chain.max_block_range })
  const history = new Map<string, ImportTransaction[]>()
  const rows = new Map<string, ImportTransaction>()
  const snapshots = new Map<string, VaultSnapshot>()
  const warnings: string[] = []
  let progress = new Map<string, VaultProgress>()
  let previous: BlockRef | null = null
  let cursor = from - 1n
  for (let range = nextRange(cursor, confirmed, maxBlocks); range; range = nextRange(cursor, confirmed, maxBlocks)) {
    const batch = await collectRange(reader, fetcher, { vaults, from: range.from, to: range.to, previous, progress })
    for (const t of batch.transactions) {
      history.set(t.id, [...(history.get(t.id) ?? []), t])
      rows.set(t.id, t)
    }
    for (const s of batch.snapshots) snapshots.set(`${s.vault_id}@${s.as_of}`, s)
    warnings.push(...batch.warnings)
    progress = batch.progress
    previous = batch.block
    cursor = batch.to
  }
  return { history, transactions: [...rows.values()], snapshots: [...snapshots.values()], warnings, progress, cursor: previous! }
}

describe.skipIf(skip)(anvilSuiteTitle('chain source end to end (anvil)', skip), () => {
  let anvil: Anvil
  let chain: TestChain
  let vault: Address
  let asyncVault: Address
  const r: Record<string, TransactionReceipt> = {}
  let alice: Address, bob: Address, carol: Address, dave: Address

  beforeAll(async () => {
    anvil = await startAnvil()
    chain = new TestChain(anvil.url, anvil.accounts)
    ;[, alice, bob, carol, dave] = anvil.accounts as [Address, Address, Address, Address, Address]
    ;({ vault, asyncVault } = await chain.deployAll()) // blocks 1-3
    await chain.installMulticall3()
    const usd = (x: number) => BigInt(Math.round(x * 1e6))
    await chain.fund(alice, vault, usd(1500.25)) // 4, 5
    r.aliceDeposit = await chain.deposit(alice, vault, usd(1500.25)) // 6
    await chain.donate(vault, usd(17.3)) // 7: yield without an event
    await chain.fund(bob, vault, usd(250.5)) // 8, 9
    r.bobDeposit = await chain.deposit(bob, vault, usd(250.5)) // 10
    r.aliceWithdraw = await chain.withdraw(alice, vault, usd(100)) // 11
    await chain.approveShares(bob, vault, carol, 10n ** 30n) // 12
    // Carol withdraws from Bob's shares to herself: the transaction is Bob's (the owner's).
    r.bobWithdraw = await chain.withdraw(bob, vault, 50_000_001n, { sender: carol }) // 13
    await chain.fund(carol, asyncVault, usd(3400)) // 14, 15
    r.carolDeposit = await chain.deposit(carol, asyncVault, usd(3000)) // 16
    await chain.donate(asyncVault, usd(30)) // 17
    // Carol deposits for Dave: Dave owns the shares, so the deposit is Dave's.
    r.daveDeposit = await chain.deposit(carol, asyncVault, usd(400), dave) // 18
    r.carolRequest = await chain.requestRedeem(carol, 1000n * 10n ** 18n) // 19
    r.daveRequest = await chain.requestRedeem(dave, await chain.shares(asyncVault, dave)) // 20
    await chain.mine(3) // 21-23
    await chain.fulfill(carol, 1000n * 10n ** 18n) // 24
    r.carolClaim1 = await chain.claim(carol, 600n * 10n ** 18n) // 25: part of the request
    r.carolClaim2 = await chain.claim(carol, 400n * 10n ** 18n) // 26: the rest
    await chain.mine(2) // 27, 28: block 26 is now 2 deep
  })

  afterAll(async () => {
    await anvil?.stop()
  })

  it('the scenario landed in the blocks the expectations assume', () => {
    expect(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v.blockNumber)]))).toEqual({
      aliceDeposit: 6,
      bobDeposit: 10,
      aliceWithdraw: 11,
      bobWithdraw: 13,
      carolDeposit: 16,
      daveDeposit: 18,
      carolRequest: 19,
      daveRequest: 20,
      carolClaim1: 25,
      carolClaim2: 26,
    })
  })

  async function followedVaults(reader: ChainReader): Promise<FollowedVault[]> {
    const head = await reader.headNumber()
    return [
      { id: 'usd-4626', address: vault, kind: 'erc4626', snapshotIntervalMs: 3_600_000, facts: await reader.vaultFacts(vault, head) },
      { id: 'usd-7540', address: asyncVault, kind: 'erc7540', snapshotIntervalMs: 3_600_000, facts: await reader.vaultFacts(asyncVault, head) },
    ]
  }

  it('reads asset and decimals once per vault', async () => {
    const counter = countingTransport(anvil.url)
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport: counter.transport })
    const [v, a] = await followedVaults(reader)
    const asset = chain.deployment.asset
    expect(v!.facts).toEqual({ address: vault, asset, assetDecimals: 6, vaultDecimals: 18 })
    expect(a!.facts).toEqual({ address: asyncVault, asset, assetDecimals: 6, vaultDecimals: 18 })
    // the head, the Multicall3 probe, then per vault asset() + decimals() in one call and the asset's decimals() in another
    expect(Object.fromEntries(counter.counts)).toEqual({ eth_blockNumber: 1, eth_getCode: 1, eth_call: 4 })
    counter.reset()
    await followedVaults(reader)
    expect(Object.fromEntries(counter.counts)).toEqual({ eth_blockNumber: 1 })
  })

  it('turns the chain into exactly the expected transactions and snapshots, range by range', async () => {
    const counter = countingTransport(anvil.url)
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport: counter.transport })
    const vaults = await followedVaults(reader)
    counter.reset()
    // Ranges of 5 blocks: the redeem requested in [18, 22] is claimed in [23, 26].
    const out = await follow(reader, vaults, 3n, 5)
    expect(out.cursor.number).toBe(26n)

    const completed = (
      id: string,
      vaultId: string,
      address: Address,
      type: 'deposit' | 'withdraw',
      amount: string,
      shares: string,
      block: number,
      receipt: TransactionReceipt,
    ): ImportTransaction => ({
      id,
      vault_id: vaultId,
      tx_hash: receipt.transactionHash,
      timestamp: iso(block),
      address,
      type,
      status: 'completed',
      amount,
      shares,
      completed_at: iso(block),
    })
    expect(out.transactions).toEqual([
      completed(idOf(r.aliceDeposit!, vault, 'Deposit'), 'usd-4626', alice, 'deposit', '1500.25', '1500.25', 6, r.aliceDeposit!),
      completed(idOf(r.bobDeposit!, vault, 'Deposit'), 'usd-4626', bob, 'deposit', '250.5', '247.64431155669051329', 10, r.bobDeposit!),
      completed(idOf(r.aliceWithdraw!, vault, 'Withdraw'), 'usd-4626', alice, 'withdraw', '100', '98.860004613449306703', 11, r.aliceWithdraw!),
      completed(idOf(r.bobWithdraw!, vault, 'Withdraw'), 'usd-4626', bob, 'withdraw', '50.000001', '49.430003295324699486', 13, r.bobWithdraw!),
      completed(idOf(r.carolDeposit!, asyncVault, 'Deposit'), 'usd-7540', carol, 'deposit', '3000', '3000', 16, r.carolDeposit!),
      completed(idOf(r.daveDeposit!, asyncVault, 'Deposit'), 'usd-7540', dave, 'deposit', '400', '396.039603961703101002', 18, r.daveDeposit!),
      {
        id: idOf(r.carolRequest!, asyncVault, 'RedeemRequest'),
        vault_id: 'usd-7540',
        tx_hash: r.carolRequest!.transactionHash,
        timestamp: iso(19),
        address: carol,
        type: 'redeem',
        status: 'completed',
        // convertToAssets(1000 shares) at the end of block 19, not what the claims paid (606 + 404)
        amount: '1009.999999',
        shares: '1000',
        completed_at: iso(26),
      },
      {
        id: idOf(r.daveRequest!, asyncVault, 'RedeemRequest'),
        vault_id: 'usd-7540',
        tx_hash: r.daveRequest!.transactionHash,
        timestamp: iso(20),
        address: dave,
        type: 'redeem',
        status: 'pending',
        amount: '399.999999',
        shares: '396.039603961703101002',
        completed_at: null,
      },
    ])
    // Carol's redeem was pending when its range was recorded, and stayed pending after the
    // partial claim (block 25), until the claim of the rest (block 26).
    const carolRedeem = out.history.get(idOf(r.carolRequest!, asyncVault, 'RedeemRequest'))!
    expect(carolRedeem.map((t) => [t.status, t.completed_at])).toEqual([
      ['pending', null],
      ['completed', iso(26)],
    ])
    expect(out.progress.get('usd-7540')!.open.map((o) => [o.transaction.address, o.controller, o.remainingShares])).toEqual([
      [dave, dave, '396039603961703101002'],
    ])
    expect(out.progress.get('usd-4626')!.open).toEqual([])

    const snap = (vaultId: string, block: number, share_price: string, tvl: string): VaultSnapshot => ({
      vault_id: vaultId,
      as_of: iso(block),
      share_price,
      tvl,
      base_asset_price_usd: null,
    })
    expect(out.snapshots).toEqual([
      // first snapshot at the first block followed, then one per block with an event of the vault
      snap('usd-4626', 3, '1', '0'),
      snap('usd-7540', 3, '1', '0'),
      snap('usd-4626', 6, '1', '1500.25'),
      snap('usd-4626', 10, '1.011531', '1768.05'),
      snap('usd-4626', 11, '1.011531', '1668.05'),
      snap('usd-4626', 13, '1.011531', '1618.049999'),
      snap('usd-7540', 16, '1', '3000'),
      snap('usd-7540', 18, '1.009999', '3430'),
      snap('usd-7540', 19, '1.009999', '3430'),
      snap('usd-7540', 20, '1.009999', '3430'),
      // the fulfilment (block 24) emits no event; its effect shows at the next snapshot
      snap('usd-7540', 25, '1.01', '2420.000001'),
      snap('usd-7540', 26, '1.01', '2420.000001'),
    ])
    expect(out.warnings).toEqual([])

    // The load on the RPC, for the report: requests per processed block per vault.
    const blocks = 26 - 3 + 1
    console.log(
      `[rpc load] multicall, ranges of 5: ${counter.total()} requests for ${blocks} blocks × 2 vaults = ${(counter.total() / blocks / 2).toFixed(3)} per block per vault`,
      Object.fromEntries(counter.counts),
    )
  })

  it('reads the same states with and without Multicall3, in fewer requests with it', async () => {
    const withCounter = countingTransport(anvil.url)
    const withoutCounter = countingTransport(anvil.url)
    const withMc = new ChainReader({ chain: chainConfig(anvil.url), transport: withCounter.transport })
    const without = new ChainReader({ chain: chainConfig(anvil.url, null), transport: withoutCounter.transport })
    expect(await withMc.multicallContract()).toEqual({ address: '0xca11bde05977b3631167028862be2a173976ca11', fromBlock: 0n })
    expect(await without.multicallContract()).toBeNull()
    const vaults = await followedVaults(withMc)
    const requests = vaults.map((v) => ({ facts: v.facts, redeemShares: [1000n * 10n ** 18n, 1n] }))
    for (const block of [6n, 19n, 26n]) {
      withCounter.reset()
      withoutCounter.reset()
      const a = await withMc.readStates(requests, block)
      const b = await without.readStates(requests, block)
      expect(a).toEqual(b)
      expect(Object.fromEntries(withCounter.counts)).toEqual({ eth_call: 1 })
      // 3 reads + 2 redeem conversions per vault
      expect(Object.fromEntries(withoutCounter.counts)).toEqual({ eth_call: 10 })
    }
    const at19 = (await withMc.readStates(requests, 19n)).get(asyncVault)
    expect(at19).toEqual({
      blockNumber: 19n,
      totalAssets: 3_430_000_000n,
      totalSupply: 3_396_039_603_961_703_101_002n,
      assetsPerShare: 1_009_999n,
      redeemAssets: new Map([
        [1000n * 10n ** 18n, 1_009_999_999n],
        [1n, 0n],
      ]),
    })

    // The whole scenario followed both ways gives the same records.
    withCounter.reset()
    withoutCounter.reset()
    const one = await follow(withMc, vaults, 3n, 2000)
    const two = await follow(without, vaults, 3n, 2000)
    expect(two.transactions).toEqual(one.transactions)
    expect(two.snapshots).toEqual(one.snapshots)
    for (const [name, c] of [
      ['multicall', withCounter],
      ['plain eth_calls', withoutCounter],
    ] as const)
      console.log(
        `[rpc load] ${name}, one range: ${c.total()} requests for 24 blocks × 2 vaults = ${(c.total() / 48).toFixed(3)} per block per vault`,
        Object.fromEntries(c.counts),
      )
  })

  it('before Multicall3 existed at a block, reads that block with plain calls', async () => {
    const counter = countingTransport(anvil.url)
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport: counter.transport })
    const [v] = await followedVaults(reader)
    // The code was set while block 3 was the newest: anvil shows it from block 3 on, not at block 2.
    counter.reset()
    const at2 = (await reader.readStates([{ facts: v!.facts }], 2n)).get(vault)
    expect(at2).toEqual({ blockNumber: 2n, totalAssets: 0n, totalSupply: 0n, assetsPerShare: 1_000_000n, redeemAssets: new Map() })
    // one multicall that found no contract, then the 3 calls one by one; the reader remembers the gap
    expect(Object.fromEntries(counter.counts)).toEqual({ eth_call: 4 })
    expect((await reader.multicallContract())!.fromBlock).toBe(3n)
    counter.reset()
    const at1 = (await reader.readStates([{ facts: v!.facts }], 1n)).get(vault)
    expect(at1).toBeInstanceOf(Error)
    expect((at1 as Error).message).toMatch(/^vault 0x[0-9a-f]{40} at block 1: totalAssets\(\): The contract function "totalAssets" returned no data/)
    expect(Object.fromEntries(counter.counts)).toEqual({ eth_call: 3 })
  })

  it('a quiet range costs one eth_getLogs and one header, however long', async () => {
    const counter = countingTransport(anvil.url)
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport: counter.transport })
    const vaults = await followedVaults(reader)
    const fetcher = new LogFetcher(reader.client, { maxSpan: 2000 })
    const previous = await reader.block(26n)
    const lastSnapshotAt = iso(26)
    const progress = new Map(vaults.map((v) => [v.id, { lastSnapshotAt, open: [] }]))
    await chain.mine(40)
    counter.reset()
    const batch = await collectRange(reader, fetcher, { vaults, from: 27n, to: 66n, previous, progress })
    expect(batch.transactions).toEqual([])
    expect(batch.snapshots).toEqual([])
    expect(Object.fromEntries(counter.counts)).toEqual({ eth_getLogs: 1, eth_getBlockByNumber: 1 })
  })

  it('yield without an event (a donation) shows at the next timed snapshot', async () => {
    const counter = countingTransport(anvil.url)
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport: counter.transport })
    const vaults = (await followedVaults(reader)).map((v) => ({ ...v, snapshotIntervalMs: 60_000 })) // every 5 blocks
    const fetcher = new LogFetcher(reader.client, { maxSpan: 2000 })
    const head = Number(await chain.blockNumber())
    const previous = await reader.block(BigInt(head))
    const progress = new Map(vaults.map((v) => [v.id, { lastSnapshotAt: iso(head), open: [] }]))
    const donation = await chain.donate(vault, 161_805_000n) // 161.805 tUSD
    expect(donation.blockNumber).toBe(BigInt(head + 1))
    await chain.mine(7)
    counter.reset()
    const batch = await collectRange(reader, fetcher, { vaults, from: BigInt(head + 1), to: BigInt(head + 6), previous, progress })
    expect(batch.transactions).toEqual([])
    // tvl 1618.049999 + 161.805; share price convertToAssets(1e18) = floor(1e18 × (1779854999 + 1) / (1599604303647916507101 + 1e12))
    expect(batch.snapshots).toEqual([
      // a minute (5 blocks) after the last snapshot
      { vault_id: 'usd-4626', as_of: iso(head + 5), share_price: '1.112684', tvl: '1779.854999', base_asset_price_usd: null },
      { vault_id: 'usd-7540', as_of: iso(head + 5), share_price: '1.01', tvl: '2420.000001', base_asset_price_usd: null },
    ])
    expect(batch.progress.get('usd-4626')!.lastSnapshotAt).toBe(iso(head + 5))
    // logs, the range's last header, the snapshot block's header, one multicall for both vaults
    expect(Object.fromEntries(counter.counts)).toEqual({ eth_getLogs: 1, eth_getBlockByNumber: 2, eth_call: 1 })
  })
})
