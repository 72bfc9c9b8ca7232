import { Decimal } from 'decimal.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { errorBody, answered } from '../support/bodies.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { vaultDoc } from '../support/wallet-data.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const now = new Date('2026-11-21T12:30:00.000Z') // a Saturday

const snap = (vault_id: string, as_of: string, share_price: string, tvl = '1000', base_asset_price_usd: string | null = '1') => ({
  vault_id,
  as_of,
  share_price,
  tvl,
  base_asset_price_usd,
})

// "steady": a year of history, a spike 6 hours before its newest snapshot (1.6 is +52 % from
// 1.0498, flagged; back to 1.05 is -34 %, not). Expected APYs computed with Python's decimal
// module at 60 digits: ((p1 / p0) ** (365 / days) - 1) * 100, rounded half up to 6 decimals.
const STEADY = [
  snap('steady', '2025-11-21T12:00:00.000Z', '1'),
  snap('steady', '2026-08-21T12:00:00.000Z', '1.03'),
  snap('steady', '2026-10-22T12:00:00.000Z', '1.04'),
  snap('steady', '2026-11-14T12:00:00.000Z', '1.045'),
  snap('steady', '2026-11-20T12:00:00.000Z', '1.0498'),
  snap('steady', '2026-11-21T06:00:00.000Z', '1.6', '1000', null),
  snap('steady', '2026-11-21T12:00:00.000Z', '1.05', '1200', '0.9998'),
]
const YOUNG = [snap('young', '2026-11-21T00:00:00.000Z', '1', '500', null), snap('young', '2026-11-21T10:00:00.000Z', '1.001', '500', null)]
const ETH = [snap('eth-vault', '2026-11-13T12:00:00.000Z', '1', '10', '3000'), snap('eth-vault', '2026-11-21T12:00:00.000Z', '0.999', '10', '3000')]
const LATER = [snap('later', '2026-11-22T00:00:00.000Z', '1', '3000', '1')] // only after now

/** A vault record whose live values are its newest snapshot's (so the import records no extra one). */
const record = (snaps: ReturnType<typeof snap>[], overrides = {}) => {
  const last = snaps.at(-1)!
  return vaultDoc(last.vault_id, { share_price: last.share_price, tvl: last.tvl, base_asset_price_usd: last.base_asset_price_usd, ...overrides })
}

/** `n` consecutive series points from `from`, `step` apart, all alike. */
const run = (from: string, n: number, step: number, point: object) =>
  Array.from({ length: n }, (_, i) => ({ t: new Date(Date.parse(from) + i * step).toISOString(), ...point }))

/** An apy_basis entry ending at `to` (by default steady's s1). */
const basis = (from: string, share_price_from: string, to = '2026-11-21T12:00:00.000Z', share_price_to = '1.05') => ({
  from,
  to,
  share_price_from,
  share_price_to,
})
const NO_BASIS = { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null }

const STEADY_PERFORMANCE = {
  vault_id: 'steady',
  as_of: '2026-11-21T12:00:00.000Z',
  share_price: '1.05',
  tvl: '1200',
  tvl_usd: '1199.76',
  apy_pct: {
    '1d': 7.200468, // 1.0498 → 1.05, exactly a day back
    '7d': 28.260401, // 1.045 → 1.05, exactly 7 days back
    '30d': 12.347698, // 1.04 → 1.05, exactly 30 days back
    '90d': 7.928452, // 1.03 → 1.05: the newest at or before 90 days back lies 92 days back
    '1y': 5, // 1 → 1.05 over 365 days
    inception: 5,
  },
  // The s0 and s1 of each window (decisions §14): s1 the newest unflagged snapshot, never the spike.
  apy_basis: {
    '1d': basis('2026-11-20T12:00:00.000Z', '1.0498'),
    '7d': basis('2026-11-14T12:00:00.000Z', '1.045'),
    '30d': basis('2026-10-22T12:00:00.000Z', '1.04'),
    '90d': basis('2026-08-21T12:00:00.000Z', '1.03'),
    '1y': basis('2025-11-21T12:00:00.000Z', '1'),
    inception: basis('2025-11-21T12:00:00.000Z', '1'),
  },
}

describe(`performance history (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => now })
    await importDocument(
      {
        vaults: [record(STEADY), record(YOUNG), record(ETH, { name: 'Ether Yield', symbol: 'vgETH', base_asset: 'ETH' }), record(LATER)],
        vault_snapshots: [...STEADY, ...YOUNG, ...ETH, ...LATER],
      },
      t.db.prisma,
      { clock: () => now },
    )
  })
  afterAll(() => t.close())

  const get = async (path: string) => {
    const res = await t.request(path)
    return { status: res.status, body: await res.json() }
  }

  describe('GET /v1/vaults/{id}/performance', () => {
    it('answers the newest snapshot and every APY window, leaving the spike out', async () => {
      expect(await get('/v1/vaults/steady/performance')).toEqual({ status: 200, body: STEADY_PERFORMANCE })
    })

    it('apy_basis gives apy_pct back for every window by the formula of §9, computed here in 60-digit decimals', async () => {
      const D = Decimal.clone({ precision: 60 })
      const { body } = await get('/v1/vaults/steady/performance')
      const windows = Object.keys(body.apy_pct)
      expect(Object.keys(body.apy_basis)).toEqual(windows)
      for (const w of windows) {
        const b = body.apy_basis[w]
        const exponent = new D(365 * DAY).div(Date.parse(b.to) - Date.parse(b.from))
        const apy = new D(b.share_price_to).div(b.share_price_from).pow(exponent).minus(1).times(100)
        expect(apy.toDecimalPlaces(6, D.ROUND_HALF_UP).toNumber(), w).toBe(body.apy_pct[w])
      }
    })

    it('answers null, never 0, where the history does not reach back; USD values null without a price', async () => {
      expect(await get('/v1/vaults/young/performance')).toEqual({
        status: 200,
        body: {
          vault_id: 'young',
          as_of: '2026-11-21T10:00:00.000Z',
          share_price: '1.001',
          tvl: '500',
          tvl_usd: null,
          apy_pct: { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null }, // 10 hours of history
          apy_basis: NO_BASIS,
        },
      })
      expect((await get('/v1/vaults/eth-vault/performance')).body).toEqual({
        vault_id: 'eth-vault',
        as_of: '2026-11-21T12:00:00.000Z',
        share_price: '0.999',
        tvl: '10',
        tvl_usd: '30000',
        // 1 → 0.999 over 8 days: ((0.999)^(365/8) − 1) × 100 = -4.4621639…
        apy_pct: { '1d': -4.462164, '7d': -4.462164, '30d': null, '90d': null, '1y': null, inception: -4.462164 },
        apy_basis: {
          ...NO_BASIS,
          '1d': basis('2026-11-13T12:00:00.000Z', '1', '2026-11-21T12:00:00.000Z', '0.999'),
          '7d': basis('2026-11-13T12:00:00.000Z', '1', '2026-11-21T12:00:00.000Z', '0.999'),
          inception: basis('2026-11-13T12:00:00.000Z', '1', '2026-11-21T12:00:00.000Z', '0.999'),
        },
      })
    })

    it('answers nulls for a vault without a snapshot up to now, and 404 for an unknown vault', async () => {
      expect(await get('/v1/vaults/later/performance')).toEqual({
        status: 200,
        body: {
          vault_id: 'later',
          as_of: null,
          share_price: null,
          tvl: null,
          tvl_usd: null,
          apy_pct: { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null },
          apy_basis: NO_BASIS,
        },
      })
      expect(await get('/v1/vaults/nope/performance')).toEqual({ status: 404, body: errorBody('not_found', 'Vault "nope" was not found.') })
    })
  })

  describe('GET /v1/vaults/{id}/performance/series', () => {
    const day = { tvl: '1000', tvl_usd: '1000' }
    it('30d (the default): 6-hour buckets carrying each snapshot forward, the spike flagged with a null APY', async () => {
      const expected = {
        timeframe: '30d',
        points: [
          // 1.03 → 1.04 over 62 days; the window opens at 2026-10-22T18:00, after this snapshot
          ...run('2026-10-22T18:00:00.000Z', 91, 6 * HOUR, { share_price: '1.04', ...day, apy_7d_pct: 5.852942 }),
          ...run('2026-11-14T12:00:00.000Z', 24, 6 * HOUR, { share_price: '1.045', ...day, apy_7d_pct: 7.908469 }), // 1.04 → 1.045, 23 days
          ...run('2026-11-20T12:00:00.000Z', 3, 6 * HOUR, { share_price: '1.0498', ...day, apy_7d_pct: 12.52953 }), // 1.04 → 1.0498, 29 days
          { t: '2026-11-21T06:00:00.000Z', share_price: '1.6', tvl: '1000', tvl_usd: null, apy_7d_pct: null, flags: ['spike'] },
          { t: '2026-11-21T12:00:00.000Z', share_price: '1.05', tvl: '1200', tvl_usd: '1199.76', apy_7d_pct: 28.260401 },
        ],
      }
      expect(await get('/v1/vaults/steady/performance/series')).toEqual({ status: 200, body: expected })
      expect(await get('/v1/vaults/steady/performance/series?timeframe=30d')).toEqual({ status: 200, body: expected })
      expect(expected.points).toHaveLength(120)
    })

    it('7d: hourly points from the first snapshot on; all: weekly (Monday) points', async () => {
      const young = { tvl: '500', tvl_usd: null, apy_7d_pct: null }
      expect(await get('/v1/vaults/young/performance/series?timeframe=7d')).toEqual({
        status: 200,
        body: {
          timeframe: '7d',
          points: [
            ...run('2026-11-21T00:00:00.000Z', 10, HOUR, { share_price: '1', ...young }),
            ...run('2026-11-21T10:00:00.000Z', 3, HOUR, { share_price: '1.001', ...young }),
          ],
        },
      })
      const { body } = await get('/v1/vaults/steady/performance/series?timeframe=all')
      expect(body.points[0]).toEqual({ t: '2025-11-17T00:00:00.000Z', share_price: '1', tvl: '1000', tvl_usd: '1000', apy_7d_pct: null })
      expect(body.points.at(-1)).toEqual({ t: '2026-11-16T00:00:00.000Z', share_price: '1.05', tvl: '1200', tvl_usd: '1199.76', apy_7d_pct: 28.260401 })
      expect(body.points).toHaveLength(53)
      expect((await get('/v1/vaults/steady/performance/series?timeframe=1y')).body.points).toHaveLength(365) // every day: the first snapshot lies before the window
    })

    it('answers no points for a vault without snapshots up to now; 404 for an unknown vault; 400 for a bad timeframe', async () => {
      for (const tf of ['7d', '30d', '1y', 'all'])
        expect(await get(`/v1/vaults/later/performance/series?timeframe=${tf}`)).toEqual({ status: 200, body: { timeframe: tf, points: [] } })
      expect(await get('/v1/vaults/nope/performance/series?timeframe=7d')).toEqual({ status: 404, body: errorBody('not_found', 'Vault "nope" was not found.') })
      for (const bad of ['90d', 'P7D', ''])
        expect(await get(`/v1/vaults/steady/performance/series?timeframe=${bad}`)).toEqual({
          status: 400,
          body: errorBody('bad_request', 'timeframe must be one of "7d", "30d", "1y", "all".'),
        })
    })

    it('sends an ETag and a short public Cache-Control, and answers If-None-Match with 304', async () => {
      for (const path of ['/v1/vaults/steady/performance', '/v1/vaults/steady/performance/series?timeframe=1y']) {
        const res = await t.request(path)
        expect(res.headers.get('cache-control')).toBe('public, max-age=10')
        const again = await t.request(path, { headers: { 'if-none-match': res.headers.get('etag')! } })
        expect(again.status).toBe(304)
      }
    })
  })

  describe('GraphQL', () => {
    it('gives the values REST gives, camelCase, and Vault.tvlUsd / baseAssetPriceUsd', async () => {
      const { body } = await t.graphql(`{ vault(id: "steady") {
        tvl tvlUsd baseAssetPriceUsd
        performance { asOf sharePrice tvl tvlUsd apy1d apy7d apy30d apy90d apy1y apyInception }
        performanceSeries { timeframe points { t sharePrice tvl tvlUsd apy7dPct flags } }
      } }`)
      const rest = STEADY_PERFORMANCE
      const series = (await get('/v1/vaults/steady/performance/series?timeframe=30d')).body
      expect(body).toEqual(
        answered({
          vault: {
            tvl: '1200',
            tvlUsd: '1199.76',
            baseAssetPriceUsd: '0.9998',
            performance: {
              asOf: rest.as_of,
              sharePrice: rest.share_price,
              tvl: rest.tvl,
              tvlUsd: rest.tvl_usd,
              apy1d: rest.apy_pct['1d'],
              apy7d: rest.apy_pct['7d'],
              apy30d: rest.apy_pct['30d'],
              apy90d: rest.apy_pct['90d'],
              apy1y: rest.apy_pct['1y'],
              apyInception: rest.apy_pct.inception,
            },
            performanceSeries: {
              timeframe: 'P30D',
              points: series.points.map((p: any) => ({
                t: p.t,
                sharePrice: p.share_price,
                tvl: p.tvl,
                tvlUsd: p.tvl_usd,
                apy7dPct: p.apy_7d_pct,
                flags: p.flags ?? [],
              })),
            },
          },
        }),
      )
    })

    it('costs a performance series by its bucket count', async () => {
      const { status, body } = await t.graphql('{ vaults(first: 100) { edges { node { performanceSeries(timeframe: P1Y) { points { t } } } } } }')
      expect(status).toBe(400)
      expect(body.errors[0]).toMatchObject({
        message: expect.stringMatching(/^Query Cost limit of 50000 exceeded, found \d+\.$/),
        extensions: { code: 'bad_request' },
      })
      expect((await t.graphql('{ vaults(first: 2) { edges { node { performanceSeries(timeframe: P1Y) { points { t } } } } } }')).status).toBe(200)
    })
  })

  describe('vaults(orderBy:, search:)', () => {
    const ids = async (args: string) => {
      const { body } = await t.graphql(`{ vaults(chain: "ethereum"${args}) { edges { node { id } } } }`)
      expect(body.errors).toBeUndefined()
      return body.data.vaults.edges.map((e: any) => e.node.id)
    }

    it('sorts by a value, largest first unless asc, vaults without the value last either way, ties by id', async () => {
      expect(await ids('')).toEqual(['eth-vault', 'later', 'steady', 'young']) // by id
      expect(await ids(', orderBy: { field: tvl }')).toEqual(['later', 'steady', 'young', 'eth-vault']) // 3000, 1200, 500, 10 (base units)
      expect(await ids(', orderBy: { field: tvlUsd }')).toEqual(['eth-vault', 'later', 'steady', 'young']) // 30000, 3000, 1199.76, none
      expect(await ids(', orderBy: { field: tvlUsd, direction: asc }')).toEqual(['steady', 'later', 'eth-vault', 'young'])
      expect(await ids(', orderBy: { field: apy7d }')).toEqual(['steady', 'eth-vault', 'later', 'young']) // 28.26, -4.46, none, none
      expect(await ids(', orderBy: { field: apy7d, direction: asc }')).toEqual(['eth-vault', 'steady', 'later', 'young'])
      expect(await ids(', orderBy: { field: apy30d }')).toEqual(['steady', 'eth-vault', 'later', 'young']) // 12.35, then none by id
    })

    it('searches id, name and symbol ignoring case; % and _ are plain characters', async () => {
      expect(await ids(', search: "ETH"')).toEqual(['eth-vault'])
      expect(await ids(', search: "yield"')).toEqual(['eth-vault']) // the name "Ether Yield"
      expect(await ids(', search: "VGeth"')).toEqual(['eth-vault']) // the symbol
      expect(await ids(', search: "vault "')).toEqual(['later', 'steady', 'young']) // "Vault later", …
      expect(await ids(', search: "%"')).toEqual([])
      expect(await ids(', search: "_"')).toEqual([])
      expect(await ids(', search: ""')).toEqual(['eth-vault', 'later', 'steady', 'young'])
      expect(await ids(', search: "e", orderBy: { field: tvl, direction: asc }')).toEqual(['eth-vault', 'steady', 'later'])
      const { status, body } = await t.graphql(`{ vaults(search: "${'x'.repeat(101)}") { edges { cursor } } }`)
      expect(status).toBe(400)
      expect(body.errors[0]).toMatchObject({ message: 'search must be at most 100 characters.', extensions: { code: 'bad_request' } })
    })

    it('pages through an order with signed cursors, forward and backward; a cursor of another order or search is refused', async () => {
      const order = 'orderBy: { field: apy7d }'
      const all = ['steady', 'eth-vault', 'later', 'young']
      for (const size of [1, 2, 3]) {
        const seen: string[] = []
        let after: string | null = null
        for (;;) {
          const { body } = await t.graphql(
            `query($after: String) { vaults(chain: "ethereum", ${order}, first: ${size}, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`,
            { after },
          )
          seen.push(...body.data.vaults.edges.map((e: any) => e.node.id))
          if (!body.data.vaults.pageInfo.hasNextPage) break
          after = body.data.vaults.pageInfo.endCursor
        }
        expect(seen).toEqual(all)
      }
      const first2 = (await t.graphql(`{ vaults(chain: "ethereum", ${order}, first: 2) { pageInfo { endCursor } } }`)).body.data.vaults.pageInfo.endCursor
      const back = await t.graphql(
        `query($c: String) { vaults(chain: "ethereum", ${order}, last: 5, before: $c) { edges { node { id } } pageInfo { hasPreviousPage hasNextPage } } }`,
        { c: first2 },
      )
      expect(back.body.data.vaults).toEqual({ edges: [{ node: { id: 'steady' } }], pageInfo: { hasPreviousPage: false, hasNextPage: true } })
      for (const other of ['orderBy: { field: apy30d }', 'orderBy: { field: apy7d, direction: asc }', `${order}, search: "a"`, '']) {
        const { body } = await t.graphql(`query($c: String) { vaults(chain: "ethereum", ${other}, after: $c) { edges { cursor } } }`, { c: first2 })
        expect(body.errors[0]).toMatchObject({
          message: 'after was issued for a different filter, search or order; start again from the first page.',
          extensions: { code: 'bad_request' },
        })
      }
    })
  })

  describe('statements', () => {
    beforeAll(async () => {
      // 50 vaults on another chain, each with a few weeks of history.
      const bulk = Array.from({ length: 50 }, (_, i) => `bulk-${String(i).padStart(2, '0')}`)
      const snaps = bulk.flatMap((id, i) => [
        snap(id, new Date(now.getTime() - 40 * DAY).toISOString(), '1'),
        snap(id, new Date(now.getTime() - 8 * DAY).toISOString(), `1.0${i}`),
        snap(id, new Date(now.getTime() - HOUR).toISOString(), `1.1${i}`, String(1000 + i)),
      ])
      await importDocument(
        { vaults: bulk.map((id, i) => vaultDoc(id, { chain: 'base', share_price: `1.1${i}`, tvl: String(1000 + i) })), vault_snapshots: snaps },
        t.db.prisma,
        {
          clock: () => now,
        },
      )
    })

    it('a list of vaults with their 7d/30d APY costs the same few statements for 1 vault as for 50, in any order', async () => {
      const count = async (args: string) => {
        const { result, statements } = await recordSql(() =>
          t.graphql(`{ vaults(chain: "base", ${args}) { edges { node { id tvlUsd performance { apy7d apy30d } } } } }`),
        )
        expect(result.body.errors).toBeUndefined()
        return { statements: statements.length, vaults: result.body.data.vaults.edges.length }
      }
      expect(await count('first: 1')).toEqual({ statements: 2, vaults: 1 }) // the page, then the performance of all its vaults
      expect(await count('first: 50')).toEqual({ statements: 2, vaults: 50 })
      expect(await count('first: 1, orderBy: { field: apy7d }')).toEqual({ statements: 3, vaults: 1 }) // values, performance, rows
      expect(await count('first: 50, orderBy: { field: apy30d }')).toEqual({ statements: 3, vaults: 50 })
      expect(await count('first: 50, orderBy: { field: tvlUsd }')).toEqual({ statements: 3, vaults: 50 }) // values, rows, performance
      expect(await count('first: 50, search: "bulk"')).toEqual({ statements: 3, vaults: 50 }) // ids, rows, performance
    })

    it('REST performance costs one statement for the vault and one for its performance; a series one more', async () => {
      expect((await recordSql(() => t.request('/v1/vaults/bulk-07/performance'))).statements).toHaveLength(2)
      const { statements } = await recordSql(() => t.request('/v1/vaults/bulk-07/performance/series?timeframe=all'))
      expect(statements).toHaveLength(2)
      expect(statements[1]).toMatch(/generate_series/)
    })

    it('the APY order agrees with the values shown', async () => {
      const { body } = await t.graphql('{ vaults(chain: "base", first: 50, orderBy: { field: apy7d }) { edges { node { id performance { apy7d } } } } }')
      const apys = body.data.vaults.edges.map((e: any) => e.node.performance.apy7d)
      expect(apys.every((a: number | null) => typeof a === 'number')).toBe(true)
      expect(apys).toEqual([...apys].sort((a, b) => b - a))
    })
  })
})
