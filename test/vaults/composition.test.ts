import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ImportPosition, ImportVault } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { vaultDoc } from '../support/wallet-data.js'
import { errorBody, answered } from '../support/bodies.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const now = new Date('2026-11-21T12:30:00.000Z') // a Saturday
const ms = (iso: string) => Date.parse(iso)

const vault = (id: string): ImportVault => vaultDoc(id, { symbol: 'vgUSD', tvl: '1000' })

const usdc = (platform: string, pct: number, apy: number): ImportPosition => ({
  platform,
  asset: 'USD Coin',
  symbol: 'USDC',
  pct,
  apy_est_pct: apy,
  icon: `https://icons.test/${platform.toLowerCase()}-usdc.svg`,
})
const dai = (platform: string, pct: number, apy: number): ImportPosition => ({
  platform,
  asset: 'Dai',
  symbol: 'DAI',
  pct,
  apy_est_pct: apy,
  icon: `https://icons.test/${platform.toLowerCase()}-dai.svg`,
})

// Vault "mix": four snapshots up to now, with gaps of days between them, and one after now.
const A = { as_of: '2026-11-11T12:00:00.000Z', positions: [usdc('Aave', 60, 4), usdc('Morpho', 40, 5)] }
const B = { as_of: '2026-11-18T09:15:00.000Z', positions: [usdc('Aave', 50, 4), usdc('Morpho', 30, 5), dai('Compound', 20, 3)] }
const C = { as_of: '2026-11-21T11:00:00.000Z', positions: [usdc('Aave', 45, 4), usdc('Morpho', 25, 5), dai('Spark', 30, 7)] } // on a bucket boundary
const D = { as_of: '2026-11-21T12:30:00.000Z', positions: [usdc('Aave', 25, 4), dai('Aave', 10, 6), dai('Spark', 35, 7), usdc('Morpho', 30, 5)] } // exactly now
const FUTURE = {
  as_of: '2026-11-21T13:00:00.000Z',
  positions: [{ platform: 'Lido', asset: 'Ether', symbol: 'ETH', pct: 100, apy_est_pct: 3, icon: 'https://icons.test/lido-eth.svg' }],
}

/** `n` consecutive points from `from`, `step` apart, all with the same weights. */
const run = (from: string, n: number, step: number, weights: number[]) =>
  Array.from({ length: n }, (_, i) => ({ t: new Date(ms(from) + i * step).toISOString(), weights_pct: weights }))

describe(`composition (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => now })
    await importDocument(
      {
        vaults: [vault('mix'), vault('empty'), vault('later'), vault('cash')],
        compositions: [
          ...[A, B, C, D, FUTURE].map((s) => ({ vault_id: 'mix', ...s })),
          { vault_id: 'later', ...FUTURE },
          { vault_id: 'cash', as_of: '2026-11-21T08:00:00.000Z', positions: [] },
        ],
      },
      t.db.prisma,
    )
  })
  afterAll(() => t.close())

  const get = async (path: string) => {
    const res = await t.request(path)
    return { status: res.status, body: await res.json() }
  }

  describe('current', () => {
    it('groups the latest snapshot at or before now by platform (the default), with "mixed" where members differ', async () => {
      const expected = {
        status: 200,
        body: {
          as_of: '2026-11-21T12:30:00.000Z',
          positions: [
            // (25×4 + 10×6) / 35
            { platform: 'Aave', asset: 'mixed', symbol: 'mixed', pct: 35, apy_est_pct: 4.571429, icon: 'https://icons.test/aave-usdc.svg' },
            { platform: 'Spark', asset: 'Dai', symbol: 'DAI', pct: 35, apy_est_pct: 7, icon: 'https://icons.test/spark-dai.svg' },
            { platform: 'Morpho', asset: 'USD Coin', symbol: 'USDC', pct: 30, apy_est_pct: 5, icon: 'https://icons.test/morpho-usdc.svg' },
          ],
        },
      }
      expect(await get('/v1/vaults/mix/composition')).toEqual(expected)
      expect(await get('/v1/vaults/mix/composition?group_by=platform')).toEqual(expected)
    })

    it('groups by asset', async () => {
      expect(await get('/v1/vaults/mix/composition?group_by=asset')).toEqual({
        status: 200,
        body: {
          as_of: '2026-11-21T12:30:00.000Z',
          positions: [
            // (25×4 + 30×5) / 55 and (10×6 + 35×7) / 45; the icon of the largest member
            { platform: 'mixed', asset: 'USD Coin', symbol: 'USDC', pct: 55, apy_est_pct: 4.545455, icon: 'https://icons.test/morpho-usdc.svg' },
            { platform: 'mixed', asset: 'Dai', symbol: 'DAI', pct: 45, apy_est_pct: 6.777778, icon: 'https://icons.test/spark-dai.svg' },
          ],
        },
      })
    })

    it('answers over GraphQL, both groupings in one request', async () => {
      const { body } = await t.graphql(`{ vault(id: "mix") {
        composition { asOf positions { platform pct } }
        byAsset: composition(groupBy: asset) { positions { asset platform symbol pct apyEstPct icon } }
      } }`)
      expect(body).toEqual(
        answered({
          vault: {
            composition: {
              asOf: '2026-11-21T12:30:00.000Z',
              positions: [
                { platform: 'Aave', pct: 35 },
                { platform: 'Spark', pct: 35 },
                { platform: 'Morpho', pct: 30 },
              ],
            },
            byAsset: {
              positions: [
                { asset: 'USD Coin', platform: 'mixed', symbol: 'USDC', pct: 55, apyEstPct: 4.545455, icon: 'https://icons.test/morpho-usdc.svg' },
                { asset: 'Dai', platform: 'mixed', symbol: 'DAI', pct: 45, apyEstPct: 6.777778, icon: 'https://icons.test/spark-dai.svg' },
              ],
            },
          },
        }),
      )
    })

    it('answers a snapshot without positions with an empty list', async () => {
      expect(await get('/v1/vaults/cash/composition')).toEqual({ status: 200, body: { as_of: '2026-11-21T08:00:00.000Z', positions: [] } })
    })

    it('answers 200 with as_of null and no positions for a vault without a snapshot yet (or only later ones), REST and GraphQL alike', async () => {
      for (const id of ['empty', 'later']) {
        expect(await get(`/v1/vaults/${id}/composition`)).toEqual({ status: 200, body: { as_of: null, positions: [] } })
        expect((await t.graphql(`{ vault(id: "${id}") { id composition { asOf positions { platform } } } }`)).body).toEqual(
          answered({ vault: { id, composition: { asOf: null, positions: [] } } }),
        )
      }
      // An unknown vault is still 404.
      expect((await get('/v1/vaults/nope/composition')).status).toBe(404)
    })

    it('costs one statement for the vault and one for its snapshot', async () => {
      const { statements } = await recordSql(() => t.request('/v1/vaults/mix/composition'))
      expect(statements).toHaveLength(2)
    })
  })

  describe('series', () => {
    const labels = ['Aave', 'Spark', 'Morpho', 'Compound'] // by weight in the newest point (D), then name
    const [wA, wB, wC, wD] = [
      [60, 0, 40, 0],
      [50, 0, 30, 20],
      [45, 30, 25, 0],
      [35, 35, 30, 0],
    ]

    it('7d: 168 hourly points carrying each snapshot forward across the gaps; a boundary snapshot opens its bucket', async () => {
      const { status, body } = await get('/v1/vaults/mix/composition/series?timeframe=7d')
      expect(status).toBe(200)
      expect(body).toEqual({
        group_by: 'platform',
        timeframe: '7d',
        labels,
        points: [
          ...run('2026-11-14T13:00:00.000Z', 92, HOUR, wA), // A, from before the window
          ...run('2026-11-18T09:00:00.000Z', 74, HOUR, wB), // B (09:15) through 10:00 on the 21st
          ...run('2026-11-21T11:00:00.000Z', 1, HOUR, wC), // C at 11:00 belongs to the 11:00 bucket, not the 10:00 one
          ...run('2026-11-21T12:00:00.000Z', 1, HOUR, wD), // the newest bucket closes at now, D included, the later snapshot not
        ],
      })
      expect(body.points).toHaveLength(168)
    })

    it('30d (the default): 6-hour points, none before the first snapshot', async () => {
      const expected = {
        group_by: 'platform',
        timeframe: '30d',
        labels,
        points: [
          ...run('2026-11-11T12:00:00.000Z', 27, 6 * HOUR, wA), // the window opens 2026-10-22T18:00, but A is the first snapshot
          ...run('2026-11-18T06:00:00.000Z', 12, 6 * HOUR, wB),
          ...run('2026-11-21T06:00:00.000Z', 1, 6 * HOUR, wC),
          ...run('2026-11-21T12:00:00.000Z', 1, 6 * HOUR, wD),
        ],
      }
      expect(await get('/v1/vaults/mix/composition/series')).toEqual({ status: 200, body: expected })
      expect(await get('/v1/vaults/mix/composition/series?timeframe=30d&group_by=platform')).toEqual({ status: 200, body: expected })
    })

    it('1y by asset: daily points', async () => {
      expect(await get('/v1/vaults/mix/composition/series?timeframe=1y&group_by=asset')).toEqual({
        status: 200,
        body: {
          group_by: 'asset',
          timeframe: '1y',
          labels: ['USD Coin', 'Dai'],
          points: [
            ...run('2026-11-11T00:00:00.000Z', 7, DAY, [100, 0]),
            ...run('2026-11-18T00:00:00.000Z', 3, DAY, [80, 20]),
            ...run('2026-11-21T00:00:00.000Z', 1, DAY, [55, 45]),
          ],
        },
      })
    })

    it('all: weekly points from the week of the first snapshot, labels only for groups some point shows', async () => {
      expect(await get('/v1/vaults/mix/composition/series?timeframe=all')).toEqual({
        status: 200,
        body: {
          group_by: 'platform',
          timeframe: 'all',
          labels: ['Aave', 'Spark', 'Morpho'], // Compound lived only within a week, between two points
          points: [
            { t: '2026-11-09T00:00:00.000Z', weights_pct: [60, 0, 40] },
            { t: '2026-11-16T00:00:00.000Z', weights_pct: [35, 35, 30] },
          ],
        },
      })
    })

    it('weights of every point sum to 100', async () => {
      for (const tf of ['7d', '30d', '1y', 'all'])
        for (const g of ['platform', 'asset']) {
          const { body } = await get(`/v1/vaults/mix/composition/series?timeframe=${tf}&group_by=${g}`)
          for (const p of body.points) expect(p.weights_pct.reduce((a: number, b: number) => a + b, 0)).toBeCloseTo(100, 9)
        }
    })

    it('answers no labels and no points for a vault without snapshots up to now', async () => {
      for (const id of ['empty', 'later'])
        expect(await get(`/v1/vaults/${id}/composition/series?timeframe=all&group_by=asset`)).toEqual({
          status: 200,
          body: { group_by: 'asset', timeframe: 'all', labels: [], points: [] },
        })
    })

    it('keeps a point for a snapshot without positions', async () => {
      const { body } = await get('/v1/vaults/cash/composition/series?timeframe=7d')
      expect(body).toEqual({ group_by: 'platform', timeframe: '7d', labels: [], points: run('2026-11-21T08:00:00.000Z', 5, HOUR, []) })
    })

    it('answers over GraphQL with the timeframe as an enum', async () => {
      const { body } = await t.graphql(
        `{ vault(id: "mix") { compositionSeries(timeframe: ALL, groupBy: asset) { groupBy timeframe labels points { t weightsPct } } } }`,
      )
      expect(body).toEqual(
        answered({
          vault: {
            compositionSeries: {
              groupBy: 'asset',
              timeframe: 'ALL',
              labels: ['USD Coin', 'Dai'],
              points: [
                { t: '2026-11-09T00:00:00.000Z', weightsPct: [100, 0] },
                { t: '2026-11-16T00:00:00.000Z', weightsPct: [55, 45] },
              ],
            },
          },
        }),
      )
    })

    it('costs one statement for the vault and one for the whole series', async () => {
      const { statements } = await recordSql(() => t.request('/v1/vaults/mix/composition/series?timeframe=1y'))
      expect(statements).toHaveLength(2)
      expect(statements[1]).toMatch(/generate_series/)
    })
  })

  describe('errors and caching', () => {
    it('answers an unknown vault with 404 not_found on both endpoints', async () => {
      for (const path of ['/v1/vaults/nope/composition', '/v1/vaults/nope/composition/series?timeframe=7d'])
        expect(await get(path)).toEqual({ status: 404, body: errorBody('not_found', 'Vault "nope" was not found.') })
    })

    it('rejects a bad group_by or timeframe with 400 bad_request', async () => {
      const groupBy = errorBody('bad_request', 'group_by must be one of "platform", "asset".')
      const timeframe = errorBody('bad_request', 'timeframe must be one of "7d", "30d", "1y", "all".')
      expect(await get('/v1/vaults/mix/composition?group_by=protocol')).toEqual({ status: 400, body: groupBy })
      expect(await get('/v1/vaults/mix/composition?group_by=')).toEqual({ status: 400, body: groupBy })
      expect(await get('/v1/vaults/mix/composition/series?group_by=Platform')).toEqual({ status: 400, body: groupBy })
      expect(await get('/v1/vaults/mix/composition/series?timeframe=90d')).toEqual({ status: 400, body: timeframe })
      expect(await get('/v1/vaults/mix/composition/series?timeframe=P7D')).toEqual({ status: 400, body: timeframe })
      expect(await get('/v1/vaults/mix/composition/series?timeframe=7d&timeframe=30d')).toEqual({
        status: 400,
        body: errorBody('bad_request', 'Query parameter "timeframe" is given more than once.'),
      })
    })

    it('rejects bad arguments over GraphQL with extensions.code bad_request', async () => {
      const cases = [
        ['{ vault(id: "mix") { composition(groupBy: protocol) { asOf } } }', 'Value "protocol" does not exist in "CompositionGroupBy" enum.'],
        ['{ vault(id: "mix") { compositionSeries(timeframe: "7d") { labels } } }', 'Enum "CompositionTimeframe" cannot represent non-enum value: "7d".'],
      ]
      for (const [query, message] of cases) {
        const { status, body } = await t.graphql(query!)
        expect(status).toBe(400)
        expect(body).toEqual({ errors: [{ message, locations: [expect.any(Object)], extensions: { code: 'bad_request' } }] })
      }
    })

    it('sends an ETag and a short public Cache-Control, and answers If-None-Match with 304', async () => {
      for (const path of ['/v1/vaults/mix/composition?group_by=asset', '/v1/vaults/mix/composition/series?timeframe=7d']) {
        const res = await t.request(path)
        expect(res.headers.get('cache-control')).toBe('public, max-age=10')
        const etag = res.headers.get('etag')!
        const again = await t.request(path, { headers: { 'if-none-match': etag } })
        expect(again.status).toBe(304)
        expect(await again.text()).toBe('')
      }
    })
  })
})
