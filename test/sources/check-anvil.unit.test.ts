import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkSources } from '../../src/sources/check.js'
import { anvilSkip, anvilSuiteTitle, CHAIN_ID, countingTransport, startAnvil, TestChain, type Anvil, type Deployment } from '../support/anvil.js'

// `checkSources` (behind `vaultgate sources check`) against real contracts on a real anvil.

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

describe.skipIf(skip)(anvilSuiteTitle('sources check (anvil)', skip), () => {
  let anvil: Anvil
  let dir: string
  let first: Deployment
  let second: Deployment
  let head: bigint

  beforeAll(async () => {
    anvil = await startAnvil()
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-sources-'))
    const chain = new TestChain(anvil.url, anvil.accounts)
    first = await chain.deployAll() // blocks 1-3
    await chain.installMulticall3()
    const [, alice] = anvil.accounts as [Address, Address]
    await chain.fund(alice, first.vault, 1_234_567n) // 4, 5
    await chain.deposit(alice, first.vault, 1_234_567n) // 6
    second = await chain.deployAll() // blocks 7-9
    head = await chain.blockNumber()
  })

  afterAll(async () => {
    await anvil?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  async function file(doc: unknown): Promise<string> {
    const f = path.join(dir, `sources-${Math.random().toString(36).slice(2)}.json`)
    await writeFile(f, JSON.stringify(doc))
    return f
  }

  it('asks each chain and contract whether the follower could work with it', async () => {
    const f = await file({
      chains: {
        anvil: { chain_id: CHAIN_ID, rpc_url: anvil.url, requests_per_second: 1000 },
        'wrong-id': { chain_id: 1, rpc_url: anvil.url, multicall3_address: null },
        down: { chain_id: 5, rpc_url: 'http://127.0.0.1:1/v2/SECRET-KEY' },
      },
      vaults: [
        { ...meta('ok-4626'), chain: 'anvil', address: first.vault, kind: 'erc4626', from_block: 0 },
        { ...meta('ok-7540'), chain: 'anvil', address: first.asyncVault, kind: 'erc7540', from_block: 3 },
        { ...meta('not-async'), chain: 'anvil', address: second.vault, kind: 'erc7540', from_block: 1_000_000 },
        { ...meta('async-as-4626'), chain: 'anvil', address: second.asyncVault, kind: 'erc4626', from_block: 9 },
        { ...meta('nothing-there'), chain: 'anvil', address: '0x000000000000000000000000000000000000dEaD', kind: 'erc4626', from_block: 1 },
        { ...meta('an-erc20'), chain: 'anvil', address: first.asset, kind: 'erc4626', from_block: 1 },
        { ...meta('elsewhere'), chain: 'down', address: first.vault, kind: 'erc4626', from_block: 1 },
      ],
    })
    const findings = await checkSources(f)
    expect(findings).toEqual([
      { level: 'info', path: 'chains.anvil', message: `chain ${CHAIN_ID}, head ${head}, Multicall3 at 0xca11bde05977b3631167028862be2a173976ca11` },
      { level: 'warning', path: 'vaults[0].from_block', message: 'is before the contract was deployed: the blocks before it are read for nothing' },
      {
        level: 'info',
        path: 'vaults[0]',
        message: `"ok-4626": ERC-4626 vault over asset ${first.asset} (6 decimals, shares 18); at block ${head}: tvl 1.234567, share price 1`,
      },
      {
        level: 'info',
        path: 'vaults[1]',
        message: `"ok-7540": ERC-7540 vault over asset ${first.asset} (6 decimals, shares 18); at block ${head}: tvl 0, share price 1`,
      },
      { level: 'warning', path: 'vaults[2].from_block', message: `is beyond the chain's head (${head}): nothing is read until then` },
      {
        level: 'error',
        path: 'vaults[2].kind',
        message:
          'is "erc7540", but the contract is not an ERC-7540 vault: supportsInterface(0x620ee8e4) is not true and pendingRedeemRequest() does not answer',
      },
      {
        level: 'info',
        path: 'vaults[2]',
        message: `"not-async": ERC-4626 vault over asset ${second.asset} (6 decimals, shares 18); at block ${head}: tvl 0, share price 1`,
      },
      {
        level: 'warning',
        path: 'vaults[3].kind',
        message: 'is "erc4626", but the contract has ERC-7540 asynchronous redeems: its RedeemRequest events would be ignored',
      },
      {
        level: 'info',
        path: 'vaults[3]',
        message: `"async-as-4626": ERC-7540 vault over asset ${second.asset} (6 decimals, shares 18); at block ${head}: tvl 0, share price 1`,
      },
      { level: 'error', path: 'vaults[4].address', message: 'no contract at 0x000000000000000000000000000000000000dead on anvil' },
      { level: 'error', path: 'vaults[5].address', message: expect.stringMatching(/^is not an ERC-4626 vault: vault 0x[0-9a-f]{40}: asset\(\) failed: /) },
      { level: 'error', path: 'chains.wrong-id.chain_id', message: `is 1, but the node at rpc_url serves chain ${CHAIN_ID}` },
      // a node that does not answer may answer later: the follower asks again instead of leaving these out
      { level: 'error', path: 'chains.down.rpc_url', message: expect.stringMatching(/^the node does not answer: HTTP request failed/), transient: true },
      { level: 'error', path: 'vaults[6]', message: 'not checked: chain "down" does not answer', transient: true },
    ])
    // An RPC URL often carries an API key: never in a finding.
    expect(JSON.stringify(findings)).not.toContain('SECRET')
  })

  it("reports the file's problems with their paths and asks no chain", async () => {
    const f = await file({
      chains: { anvil: { chain_id: CHAIN_ID, rpc_url: anvil.url, confirmations: -1 } },
      vaults: [{ ...meta('v'), chain: 'anvil', address: first.vault, kind: 'erc4626', from_block: 0, perf_fee_bps: -5 }],
    })
    const counter = countingTransport(anvil.url)
    expect(await checkSources(f, { transport: () => counter.transport })).toEqual([
      { level: 'error', path: 'chains.anvil.confirmations', message: 'must be an integer from 0 to 10000' },
      { level: 'error', path: 'vaults[0].perf_fee_bps', message: 'must be an integer from 0 to 2147483647' },
    ])
    expect(counter.total()).toBe(0)
    expect(await checkSources(path.join(dir, 'missing.json'))).toEqual([{ level: 'error', path: 'file', message: 'the file does not exist' }])
  })
})
