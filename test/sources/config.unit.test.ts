import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadSourcesFile, parseSourcesConfig, SourcesConfigError, vaultRecord } from '../../src/sources/config.js'

const VAULT = '0xAbCdEf0000000000000000000000000000000001'

const minimalVault = {
  id: 'usdc-prime',
  chain: 'ethereum',
  address: VAULT,
  kind: 'erc4626',
  from_block: 19_000_000,
  name: 'USDC Prime',
  symbol: 'pUSDC',
  base_asset: 'USDC',
  status: 'active',
  perf_fee_bps: 1000,
  api_endpoint: 'https://vaults.example/usdc-prime',
}

const minimal = {
  chains: { ethereum: { chain_id: 1, rpc_url: 'https://rpc.example/v2/KEY' } },
  vaults: [minimalVault],
}

/** The problems a document is rejected for, one per line. */
function problems(doc: unknown): string[] {
  try {
    parseSourcesConfig(doc)
  } catch (e) {
    if (e instanceof SourcesConfigError) return e.issues
    throw e
  }
  throw new Error('accepted')
}

describe('sources file (VAULT_SOURCES_FILE)', () => {
  it("applies the defaults of decisions §12 and the importer's canonical form", () => {
    expect(parseSourcesConfig(minimal)).toEqual({
      chains: {
        ethereum: {
          name: 'ethereum',
          chain_id: 1,
          rpc_url: 'https://rpc.example/v2/KEY',
          confirmations: 2,
          poll_interval_ms: 4000,
          multicall3_address: undefined,
          requests_per_second: 10,
          max_block_range: 2000,
        },
      },
      vaults: [
        {
          id: 'usdc-prime',
          chain: 'ethereum',
          chain_id: 1,
          address: '0xabcdef0000000000000000000000000000000001',
          kind: 'erc4626',
          from_block: 19_000_000,
          snapshot_interval_ms: 3_600_000,
          metadata: {
            name: 'USDC Prime',
            symbol: 'pUSDC',
            base_asset: 'USDC',
            base_asset_price_usd: null,
            status: 'active',
            perf_fee_bps: 1000,
            mgmt_fee_bps: null,
            deposit_constraints: { max_deposit: null, min_deposit: null, paused: null },
            withdraw_constraints: {
              instant_liquidity: null,
              instant_slippage_max_bps: null,
              redeem_24h_threshold_pct_of_aum: null,
              redeem_48h_above_threshold: null,
            },
            icons: { dark: null, light: null },
            api_endpoint: 'https://vaults.example/usdc-prime',
            description: null,
            docs_url: null,
            inception_date: null,
            strategy_brief: null,
          },
        },
      ],
    })
  })

  it('keeps every optional setting and metadata field given, canonicalised as the importer does', () => {
    const config = parseSourcesConfig({
      chains: {
        base: {
          chain_id: 8453,
          rpc_url: 'http://10.0.0.5:8545',
          confirmations: 0,
          poll_interval_ms: 1000,
          multicall3_address: null,
          requests_per_second: 2.5,
          max_block_range: 500,
        },
      },
      vaults: [
        {
          ...minimalVault,
          chain: 'base',
          kind: 'erc7540',
          snapshot_interval_ms: 60_000,
          base_asset_price_usd: '1.000',
          mgmt_fee_bps: 50,
          deposit_constraints: { max_deposit: '1000000.50', paused: false },
          withdraw_constraints: { instant_liquidity: true, redeem_24h_threshold_pct_of_aum: 12.5 },
          icons: { dark: 'https://cdn.example/d.svg' },
          description: 'Lends USDC.',
          inception_date: '2025-02-28',
        },
      ],
    })
    expect(config.chains.base).toEqual({
      name: 'base',
      chain_id: 8453,
      rpc_url: 'http://10.0.0.5:8545',
      confirmations: 0,
      poll_interval_ms: 1000,
      multicall3_address: null,
      requests_per_second: 2.5,
      max_block_range: 500,
    })
    const [v] = config.vaults
    expect(v!.kind).toBe('erc7540')
    expect(v!.snapshot_interval_ms).toBe(60_000)
    expect(v!.metadata).toMatchObject({
      base_asset_price_usd: '1',
      mgmt_fee_bps: 50,
      deposit_constraints: { max_deposit: '1000000.5', min_deposit: null, paused: false },
      withdraw_constraints: {
        instant_liquidity: true,
        instant_slippage_max_bps: null,
        redeem_24h_threshold_pct_of_aum: 12.5,
        redeem_48h_above_threshold: null,
      },
      icons: { dark: 'https://cdn.example/d.svg', light: null },
      description: 'Lends USDC.',
      inception_date: '2025-02-28',
    })
    expect(vaultRecord(v!, { tvl: '1234.5', share_price: '1.01' })).toEqual({
      ...v!.metadata,
      id: 'usdc-prime',
      chain: 'base',
      chain_id: '8453',
      contract: { address: '0xabcdef0000000000000000000000000000000001' },
      tvl: '1234.5',
      share_price: '1.01',
    })
  })

  it("names every problem with its JSON path, its own rules and the importer's alike", () => {
    expect(
      problems({
        chains: {
          ethereum: { chain_id: 0, rpc_url: 'ftp://rpc.example/KEY', confirmations: 1.5, fast: true },
          'bad name!': { chain_id: 10, rpc_url: 'https://x.example' },
          mainnet: { chain_id: 1, rpc_url: 'https://y.example', multicall3_address: '0x12' },
          copy: { chain_id: 1, rpc_url: 'https://z.example' },
        },
        vaults: [
          { ...minimalVault, kind: 'erc20', chain: 'nope', name: undefined },
          { ...minimalVault, id: 'second', address: 'xyz', from_block: -1, tvl: '5', chain_id: 1 },
          'not a vault',
          { ...minimalVault, perf_fee_bps: 1.5, status: 'open', snapshot_interval_ms: 10 },
        ],
      }),
    ).toEqual([
      'chains.ethereum.chain_id: must be an integer from 1 to 9007199254740991',
      'chains.ethereum.rpc_url: must be an http:// or https:// URL',
      'chains.ethereum.confirmations: must be an integer from 0 to 10000',
      'chains.ethereum.fast: is not a known field',
      'chains["bad name!"]: the name must be 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit',
      'chains.mainnet.multicall3_address: must be an EVM address (0x followed by 40 hex digits), or null',
      'vaults[0].kind: must be one of "erc4626", "erc7540"',
      'vaults[0].chain: must be the name of one of the chains (ethereum, bad name!, mainnet, copy)',
      'vaults[1].address: must be an EVM address (0x followed by 40 hex digits)',
      'vaults[1].from_block: must be an integer from 0 to 9007199254740991',
      'vaults[1].tvl: is read from the chain, not configured',
      'vaults[1].chain_id: comes from the chain entry',
      'vaults[2]: must be an object',
      'vaults[3].snapshot_interval_ms: must be an integer from 1000 to 31536000000',
      // from here on, the importer's rules for vault records, in its words
      'vaults[0].name: is required',
      'vaults[3].status: must be one of "active", "paused", "closed"',
      'vaults[3].perf_fee_bps: must be an integer from 0 to 2147483647',
    ])
  })

  it('refuses the same chain or contract twice, unknown fields and a missing list', () => {
    expect(problems({ ...minimal, chains: { ...minimal.chains, mainnet: { chain_id: 1, rpc_url: 'https://x.example' } } })).toEqual([
      'chains.mainnet.chain_id: is also the chain_id of chains.ethereum',
    ])
    expect(problems({ ...minimal, vaults: [minimalVault, { ...minimalVault, address: VAULT.replace('1', '2') }] })).toEqual([
      'vaults[1].id: duplicate id "usdc-prime" (first at vaults[0])',
    ])
    expect(problems({ ...minimal, vaults: [{ ...minimalVault, deposit_constraints: { min_deposit: '10', max_deposit: '9.5' } }] })).toEqual([
      'vaults[0].deposit_constraints.min_deposit: must not exceed max_deposit',
    ])
    expect(problems({ ...minimal, vaults: [minimalVault, { ...minimalVault, id: 'again', address: VAULT.toLowerCase() }] })).toEqual([
      'vaults[1].address: is also the address of vaults[0] on ethereum',
    ])
    expect(problems({ ...minimal, vaults: [{ ...minimalVault, colour: 'blue' }] })).toEqual(['vaults[0].colour: is not a known field'])
    expect(problems({ chains: minimal.chains, extra: 1 })).toEqual(['vaults: is required', 'extra: is not a known field'])
    expect(problems([])).toEqual(['document: must be an object'])
  })

  it('never echoes an RPC URL in a message (it may carry an API key)', () => {
    const issues = problems({ chains: { ethereum: { chain_id: 1, rpc_url: 'wss://rpc.example/v2/SECRET' } }, vaults: [] })
    expect(issues).toEqual(['chains.ethereum.rpc_url: must be an http:// or https:// URL'])
  })

  describe('loadSourcesFile', () => {
    let dir: string
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-sources-'))
    })
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true })
    })

    it('reads the file, and names it in every error', async () => {
      const good = path.join(dir, 'good.json')
      await writeFile(good, JSON.stringify(minimal))
      expect((await loadSourcesFile(good)).vaults.map((v) => v.id)).toEqual(['usdc-prime'])

      const broken = path.join(dir, 'broken.json')
      await writeFile(broken, '{"chains": {,}')
      await expect(loadSourcesFile(broken)).rejects.toThrow(new RegExp(`^Invalid sources file ${broken}:\\n  not valid JSON: `))
      await expect(loadSourcesFile(path.join(dir, 'none.json'))).rejects.toThrow(
        `Invalid sources file ${path.join(dir, 'none.json')}:\n  the file does not exist`,
      )
      const bad = path.join(dir, 'bad.json')
      await writeFile(bad, JSON.stringify({ ...minimal, vaults: [{ ...minimalVault, kind: 'x' }] }))
      await expect(loadSourcesFile(bad)).rejects.toThrow(`Invalid sources file ${bad}:\n  vaults[0].kind: must be one of "erc4626", "erc7540"`)
    })
  })
})
