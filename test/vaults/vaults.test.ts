import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ImportVault } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { errorBody, answered } from '../support/bodies.js'

// Hand-made vaults in the import format (the spec's wire shape plus base_asset_price_usd): the REST
// body of a vault must be exactly its import record without base_asset_price_usd.
const full: ImportVault = {
  id: 'usdc-full',
  name: 'Full USDC',
  chain: 'ethereum',
  chain_id: '1',
  symbol: 'vgUSDC',
  base_asset: 'USDC',
  base_asset_price_usd: '0.9998',
  status: 'active',
  tvl: '1234567.000000000000000001',
  share_price: '1.05',
  perf_fee_bps: 1000,
  mgmt_fee_bps: 50,
  contract: { address: '0x00000000000000000000000000000000000000aa' },
  deposit_constraints: { max_deposit: '5000000', min_deposit: '0.5', paused: false },
  withdraw_constraints: { instant_liquidity: true, instant_slippage_max_bps: 30, redeem_24h_threshold_pct_of_aum: 12.5, redeem_48h_above_threshold: true },
  icons: { dark: 'https://icons.test/full-dark.svg', light: 'https://icons.test/full-light.svg' },
  api_endpoint: 'https://api.vaultgate.test/v1/vaults/usdc-full',
  description: 'Lends USDC across blue-chip money markets.',
  docs_url: 'https://docs.vaultgate.test/usdc-full',
  inception_date: '2025-02-28',
  strategy_brief: 'Rebalances daily towards the best risk-adjusted rate.',
}

const bare: ImportVault = {
  id: 'eth-bare',
  name: 'Bare ETH',
  chain: 'base',
  chain_id: null,
  symbol: 'vgETH',
  base_asset: 'ETH',
  base_asset_price_usd: '3000',
  status: 'paused',
  tvl: '0',
  share_price: '1',
  perf_fee_bps: 0,
  mgmt_fee_bps: null,
  contract: { address: '0x00000000000000000000000000000000000000bb' },
  deposit_constraints: { max_deposit: null, min_deposit: null, paused: null },
  withdraw_constraints: { instant_liquidity: null, instant_slippage_max_bps: null, redeem_24h_threshold_pct_of_aum: null, redeem_48h_above_threshold: null },
  icons: { dark: null, light: null },
  api_endpoint: 'https://api.vaultgate.test/v1/vaults/eth-bare',
  description: null,
  docs_url: null,
  inception_date: null,
  strategy_brief: null,
}

const closed: ImportVault = {
  ...bare,
  id: 'arb-closed',
  name: 'Closed',
  chain: 'arbitrum',
  status: 'closed',
  api_endpoint: 'https://api.vaultgate.test/v1/vaults/arb-closed',
}

const wire = ({ base_asset_price_usd: _, ...v }: ImportVault) => v

const VAULT_QUERY = `query ($id: ID!) { vault(id: $id) {
  id name chain chainId symbol baseAsset status tvl sharePrice perfFeeBps mgmtFeeBps
  contract { address }
  depositConstraints { maxDeposit minDeposit paused }
  withdrawConstraints { instantLiquidity instantSlippageMaxBps redeem24hThresholdPctOfAum redeem48hAboveThreshold }
  icons { dark light }
  apiEndpoint description docsUrl inceptionDate strategyBrief
} }`

describe(`vault reads (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    await importDocument({ vaults: [full, bare, closed] }, t.db.prisma)
  })
  afterAll(() => t.close())

  it('GET /v1/vaults/{id} answers every field of a vault with every optional set', async () => {
    const res = await t.request('/v1/vaults/usdc-full')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(wire(full))
  })

  it('GET /v1/vaults/{id} answers every optional field as null when the vault has none', async () => {
    const res = await t.request('/v1/vaults/eth-bare')
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(body).toEqual(wire(bare))
    // Present with null, not left out.
    expect(Object.keys(body)).toEqual(Object.keys(wire(bare)))
    expect(body.deposit_constraints).toEqual({ max_deposit: null, min_deposit: null, paused: null })
  })

  it('answers the same vault over GraphQL in camelCase', async () => {
    expect(await t.graphql(VAULT_QUERY, { id: 'usdc-full' })).toEqual({
      status: 200,
      body: answered({
        vault: {
          id: 'usdc-full',
          name: 'Full USDC',
          chain: 'ethereum',
          chainId: '1',
          symbol: 'vgUSDC',
          baseAsset: 'USDC',
          status: 'active',
          tvl: '1234567.000000000000000001',
          sharePrice: '1.05',
          perfFeeBps: 1000,
          mgmtFeeBps: 50,
          contract: { address: '0x00000000000000000000000000000000000000aa' },
          depositConstraints: { maxDeposit: '5000000', minDeposit: '0.5', paused: false },
          withdrawConstraints: { instantLiquidity: true, instantSlippageMaxBps: 30, redeem24hThresholdPctOfAum: 12.5, redeem48hAboveThreshold: true },
          icons: { dark: 'https://icons.test/full-dark.svg', light: 'https://icons.test/full-light.svg' },
          apiEndpoint: 'https://api.vaultgate.test/v1/vaults/usdc-full',
          description: 'Lends USDC across blue-chip money markets.',
          docsUrl: 'https://docs.vaultgate.test/usdc-full',
          inceptionDate: '2025-02-28',
          strategyBrief: 'Rebalances daily towards the best risk-adjusted rate.',
        },
      }),
    })
    const nulls = (await t.graphql(VAULT_QUERY, { id: 'eth-bare' })).body.data.vault
    expect(nulls).toMatchObject({
      chainId: null,
      mgmtFeeBps: null,
      description: null,
      docsUrl: null,
      inceptionDate: null,
      strategyBrief: null,
      icons: { dark: null, light: null },
    })
  })

  it('answers an unknown vault with 404 not_found, and null over GraphQL', async () => {
    const res = await t.request('/v1/vaults/nope')
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual(errorBody('not_found', 'Vault "nope" was not found.'))
    expect((await t.graphql(VAULT_QUERY, { id: 'nope' })).body).toEqual(answered({ vault: null }))
  })

  it('sends an ETag and a short public Cache-Control, and answers If-None-Match with 304', async () => {
    const res = await t.request('/v1/vaults/usdc-full')
    expect(res.headers.get('cache-control')).toBe('public, max-age=10')
    const etag = res.headers.get('etag')!
    expect(etag).toMatch(/^W\/".+"$/)
    const again = await t.request('/v1/vaults/usdc-full', { headers: { 'if-none-match': etag } })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe('')
    expect(again.headers.get('etag')).toBe(etag)
    // Another vault's ETag does not match.
    expect((await t.request('/v1/vaults/eth-bare', { headers: { 'if-none-match': etag } })).status).toBe(200)
  })

  describe('list', () => {
    it('GET /v1/vaults answers every vault ordered by id, and next_cursor null on the last page', async () => {
      const res = await t.request('/v1/vaults')
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('public, max-age=10')
      expect(await res.json()).toEqual({ items: [wire(closed), wire(bare), wire(full)], next_cursor: null })
    })

    it('pages with limit and cursor', async () => {
      const first = await (await t.request('/v1/vaults?limit=2')).json()
      expect(first.items.map((v: { id: string }) => v.id)).toEqual(['arb-closed', 'eth-bare'])
      expect(first.next_cursor).toEqual(expect.any(String))
      const second = await (await t.request(`/v1/vaults?limit=2&cursor=${encodeURIComponent(first.next_cursor)}`)).json()
      expect(second).toEqual({ items: [wire(full)], next_cursor: null })
    })

    it('filters by chain and status', async () => {
      expect(await (await t.request('/v1/vaults?chain=base')).json()).toEqual({ items: [wire(bare)], next_cursor: null })
      expect(await (await t.request('/v1/vaults?status=active')).json()).toEqual({ items: [wire(full)], next_cursor: null })
      expect(await (await t.request('/v1/vaults?chain=base&status=active')).json()).toEqual({ items: [], next_cursor: null })
      const gql = await t.graphql('{ vaults(status: closed) { edges { node { id status } } pageInfo { hasNextPage } } }')
      expect(gql.body).toEqual(answered({ vaults: { edges: [{ node: { id: 'arb-closed', status: 'closed' } }], pageInfo: { hasNextPage: false } } }))
    })

    it('rejects malformed parameters with 400 bad_request instead of clamping them', async () => {
      const cases: [string, string][] = [
        ['limit=0', 'limit must be an integer from 1 to 200.'],
        ['limit=201', 'limit must be an integer from 1 to 200.'],
        ['limit=abc', 'limit must be an integer from 1 to 200.'],
        ['limit=1.5', 'limit must be an integer from 1 to 200.'],
        ['limit=050', 'limit must be an integer from 1 to 200.'],
        ['status=open', 'status must be one of "active", "paused", "closed".'],
        ['chain=', 'chain must not be empty.'],
        ['cursor=', 'cursor must not be empty.'],
        ['cursor=not-a-cursor', 'cursor is not a cursor this service issued; pass next_cursor exactly as received.'],
        // Pothos' own cursor format, forged: a number where an id belongs (once a 500, and logged).
        [`cursor=${Buffer.from('GPC:N:1').toString('base64')}`, 'cursor is not a cursor this service issued; pass next_cursor exactly as received.'],
      ]
      for (const [query, message] of cases) {
        const res = await t.request(`/v1/vaults?${query}`)
        expect(res.status, query).toBe(400)
        expect(await res.json(), query).toEqual(errorBody('bad_request', message))
      }
    })

    it('rejects page sizes out of range over GraphQL too, with extensions.code', async () => {
      for (const [args, message] of [
        ['first: 201', 'first must be an integer from 1 to 200.'],
        ['first: 0', 'first must be an integer from 1 to 200.'],
        ['last: 500', 'last must be an integer from 1 to 200.'],
        ['after: "bogus"', 'after is not a cursor this service issued; pass pageInfo.endCursor exactly as received.'],
        [`after: "${Buffer.from('GPC:N:1').toString('base64')}"`, 'after is not a cursor this service issued; pass pageInfo.endCursor exactly as received.'],
        ['first: 2, before: "x"', 'Use first with after, or last with before, not both.'],
      ]) {
        const { body } = await t.graphql(`{ vaults(${args}) { edges { node { id } } } }`)
        expect(body, args).toEqual({ data: null, errors: [{ message, locations: expect.any(Array), path: ['vaults'], extensions: { code: 'bad_request' } }] })
      }
    })
  })
})

describe(`vault list batching (${testBackend})`, () => {
  let t: TestApp
  const now = new Date('2026-11-21T12:30:00.000Z')
  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => now })
    const ids = Array.from({ length: 50 }, (_, i) => `v${String(i).padStart(2, '0')}`)
    await importDocument(
      {
        vaults: ids.map((id) => ({ ...bare, id, api_endpoint: `https://api.vaultgate.test/v1/vaults/${id}` })),
        compositions: ids.flatMap((id, i) => [
          {
            vault_id: id,
            as_of: '2026-11-20T00:00:00.000Z',
            positions: [{ platform: 'Old', asset: 'Ether', symbol: 'ETH', pct: 100, apy_est_pct: 1, icon: 'old.svg' }],
          },
          {
            vault_id: id,
            as_of: '2026-11-21T06:00:00.000Z',
            positions: [
              { platform: 'Aave', asset: 'Ether', symbol: 'ETH', pct: i, apy_est_pct: 2, icon: 'aave.svg' },
              { platform: 'Lido', asset: 'Staked Ether', symbol: 'stETH', pct: 100 - i, apy_est_pct: 3, icon: 'lido.svg' },
            ],
          },
        ]),
      },
      t.db.prisma,
    )
  })
  afterAll(() => t.close())

  const LIST = `query ($n: Int!) { vaults(first: $n) { edges { node {
    id
    composition { asOf positions { platform pct } }
    byAsset: composition(groupBy: asset) { positions { asset } }
    compositionSeries(timeframe: P7D) { labels }
  } } } }`

  it('costs the same number of SQL statements for 2 vaults as for 50, with each vault its own composition', async () => {
    const two = await recordSql(() => t.graphql(LIST, { n: 2 }))
    const fifty = await recordSql(() => t.graphql(LIST, { n: 50 }))
    const edges = fifty.result.body.data.vaults.edges
    expect(edges).toHaveLength(50)
    expect(two.result.body.data.vaults.edges).toEqual(edges.slice(0, 2))
    expect(edges[7].node).toEqual({
      id: 'v07',
      composition: {
        asOf: '2026-11-21T06:00:00.000Z',
        positions: [
          { platform: 'Lido', pct: 93 },
          { platform: 'Aave', pct: 7 },
        ],
      },
      byAsset: { positions: [{ asset: 'Staked Ether' }, { asset: 'Ether' }] },
      compositionSeries: { labels: ['Lido', 'Aave', 'Old'] },
    })
    // The page, the latest snapshots, the series: one statement each.
    expect(fifty.statements).toHaveLength(3)
    expect(two.statements).toHaveLength(fifty.statements.length)
  })
})
