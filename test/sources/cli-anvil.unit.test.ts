import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilSkip, anvilSuiteTitle, CHAIN_ID, startAnvil, TestChain, type Anvil, type Deployment } from '../support/anvil.js'
import { runCli } from '../support/process.js'

// `vaultgate sources check` and `vaultgate start` with a sources file, as a person runs them:
// the process, its output and its exit code. Nothing needs a database.

const skip = anvilSkip()

const meta = (id: string) => ({
  id,
  name: `Vault ${id}`,
  symbol: 'V',
  base_asset: 'tUSD',
  status: 'active',
  perf_fee_bps: 1000,
  api_endpoint: 'https://example.test/api',
})

describe.skipIf(skip)(anvilSuiteTitle('vaultgate sources check (anvil)', skip), () => {
  let anvil: Anvil
  let dir: string
  let d: Deployment
  let head: bigint

  beforeAll(async () => {
    anvil = await startAnvil()
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-sources-cli-'))
    const chain = new TestChain(anvil.url, anvil.accounts)
    d = await chain.deployAll() // blocks 1-3
    const [, alice] = anvil.accounts as [Address, Address]
    await chain.fund(alice, d.vault, 2_500_000n)
    await chain.deposit(alice, d.vault, 2_500_000n)
    head = await chain.blockNumber()
  })

  afterAll(async () => {
    await anvil?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  async function file(name: string, doc: unknown): Promise<string> {
    const f = path.join(dir, name)
    await writeFile(f, typeof doc === 'string' ? doc : JSON.stringify(doc))
    return f
  }
  const chains = () => ({ anvil: { chain_id: CHAIN_ID, rpc_url: anvil.url, multicall3_address: null } })

  it('prints what each chain and contract answered and exits 0 when every vault can be followed', async () => {
    const f = await file('good.json', {
      chains: chains(),
      vaults: [
        { ...meta('usd'), chain: 'anvil', address: d.vault, kind: 'erc4626', from_block: 2 },
        { ...meta('usd-async'), chain: 'anvil', address: d.asyncVault, kind: 'erc7540', from_block: 3 },
      ],
    })
    expect(await runCli(['sources', 'check', f])).toEqual({
      code: 0,
      stdout: [
        `info     chains.anvil: chain ${CHAIN_ID}, head ${head}, no Multicall3 (plain eth_calls)`,
        `info     vaults[0]: "usd": ERC-4626 vault over asset ${d.asset} (6 decimals, shares 18); at block ${head}: tvl 2.5, share price 1`,
        `info     vaults[1]: "usd-async": ERC-7540 vault over asset ${d.asset} (6 decimals, shares 18); at block ${head}: tvl 0, share price 1`,
        `${f}: ready to follow (0 warning(s)).`,
        '',
      ].join('\n'),
      stderr: '',
    })
    // VAULT_SOURCES_FILE is the default file.
    expect(await runCli(['sources', 'check'], { VAULT_SOURCES_FILE: f })).toMatchObject({ code: 0, stdout: expect.stringContaining(`${f}: ready to follow`) })
  })

  it('exits 1 naming what the follower would leave out', async () => {
    const f = await file('wrong-kind.json', {
      chains: chains(),
      vaults: [
        { ...meta('usd'), chain: 'anvil', address: d.vault, kind: 'erc7540', from_block: 2 },
        { ...meta('token'), chain: 'anvil', address: d.asset, kind: 'erc4626', from_block: 1 },
      ],
    })
    const r = await runCli(['sources', 'check', f])
    expect(r.code).toBe(1)
    expect(r.stdout.split('\n').filter((l) => l.startsWith('error'))).toEqual([
      'error    vaults[0].kind: is "erc7540", but the contract is not an ERC-7540 vault: supportsInterface(0x620ee8e4) is not true and pendingRedeemRequest() does not answer',
      expect.stringMatching(/^error {4}vaults\[1\]\.address: is not an ERC-4626 vault: vault 0x[0-9a-f]{40}: asset\(\) failed: /),
    ])
    expect(r.stderr).toBe(`vaultgate: ${f}: 2 error(s), 0 warning(s); the follower would leave out what the errors name.\n`)
  })

  it("exits 1 listing the file's problems by JSON path, asking no chain", async () => {
    const f = await file('bad.json', {
      chains: { anvil: { chain_id: CHAIN_ID, rpc_url: 'http://127.0.0.1:1/v2/SECRET-KEY', poll_interval_ms: 5 } },
      vaults: [{ ...meta('usd'), chain: 'mainnet', address: '0x12', kind: 'erc4626', from_block: 0, tvl: '5' }],
    })
    const r = await runCli(['sources', 'check', f])
    expect(r).toEqual({
      code: 1,
      stdout: [
        'error    chains.anvil.poll_interval_ms: must be an integer from 100 to 3600000',
        'error    vaults[0].address: must be an EVM address (0x followed by 40 hex digits)',
        'error    vaults[0].chain: must be the name of one of the chains (anvil)',
        'error    vaults[0].tvl: is read from the chain, not configured',
        '',
      ].join('\n'),
      stderr: `vaultgate: ${f}: 4 error(s), 0 warning(s); the follower would leave out what the errors name.\n`,
    })
    expect(await runCli(['sources', 'check', await file('not-json.json', '{"chains":')])).toMatchObject({
      code: 1,
      stdout: expect.stringMatching(/^error {4}file: not valid JSON: /),
    })
  })

  it('is a usage error (2) without a file to check, or with an unknown action', async () => {
    expect(await runCli(['sources', 'check'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'vaultgate: sources check needs a FILE, or VAULT_SOURCES_FILE set.\nRun `vaultgate sources check --help` for its usage.\n',
    })
    expect(await runCli(['sources', 'chek'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("unknown sources action 'chek'\n(Did you mean check?)"),
    })
  })

  it('vaultgate start refuses a broken sources file before it opens (or creates) the database', async () => {
    const f = await file('broken.json', { chains: {}, vaults: [{ ...meta('usd'), chain: 'anvil', address: d.vault, kind: 'erc4626' }] })
    const dataDir = path.join(dir, 'never-created')
    expect(await runCli(['start'], { DATA_DIR: dataDir, VAULT_SOURCES_FILE: f })).toEqual({
      code: 1,
      stdout: '',
      stderr: [
        'vaultgate: Invalid configuration:',
        '  VAULT_SOURCES_FILE: vaults[0].from_block: is required',
        '  VAULT_SOURCES_FILE: vaults[0].chain: must be the name of one of the chains (none configured)',
        '',
      ].join('\n'),
    })
    expect(existsSync(dataDir)).toBe(false)
  })
})
