import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEMO_SPIKE, demoSpikeTime, generateDemoDataset } from '../../src/demo/dataset.js'
import { seedDemoIfEmpty } from '../../src/demo/seed.js'
import type { ImportComposition, ImportDocument, ImportPosition, ImportVault } from '../../src/importer/document.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'

// The vault endpoints over the demo dataset, checked against the dataset itself: vault bodies are
// the document's records, and compositions and series are recomputed here the slow, obvious way
// (scan every snapshot for every bucket) to compare with what the SQL buckets produce.

const HOUR = 3_600_000
const DAY = 24 * HOUR
const seededAt = new Date('2026-11-21T12:00:00.000Z')
const now = new Date('2026-11-21T12:37:00.000Z') // inside the newest hourly bucket

const wire = ({ base_asset_price_usd: _, ...v }: ImportVault) => v
const close = (n: number) => expect.closeTo(n, 5)

function referenceGroups(positions: ImportPosition[], groupBy: 'platform' | 'asset') {
  const other = groupBy === 'platform' ? 'asset' : 'platform'
  const groups = new Map<string, ImportPosition[]>()
  for (const p of positions) groups.set(p[groupBy], [...(groups.get(p[groupBy]) ?? []), p])
  return [...groups.entries()]
    .map(([name, ms]) => {
      const pct = ms.reduce((s, m) => s + m.pct, 0)
      const largest = [...ms].sort((a, b) => b.pct - a.pct)[0]!
      const same = (k: 'platform' | 'asset' | 'symbol') => (new Set(ms.map((m) => m[k])).size === 1 ? ms[0]![k] : 'mixed')
      return {
        [groupBy]: name,
        [other]: same(other),
        symbol: groupBy === 'platform' ? same('symbol') : largest.symbol,
        pct,
        apy_est_pct: ms.reduce((s, m) => s + m.pct * m.apy_est_pct, 0) / pct,
        icon: largest.icon,
      }
    })
    .sort((a, b) => b.pct - a.pct || (a[groupBy]! < b[groupBy]! ? -1 : 1))
}

const STEPS = { '7d': [HOUR, 168], '30d': [6 * HOUR, 120], '1y': [DAY, 365], all: [7 * DAY, null] } as const

function referenceSeries(snapshots: ImportComposition[], timeframe: keyof typeof STEPS, groupBy: 'platform' | 'asset') {
  const [step, count] = STEPS[timeframe]
  const weekStart = (ms: number) => Math.floor(ms / DAY) * DAY - ((new Date(ms).getUTCDay() + 6) % 7) * DAY // Monday
  const floor = (ms: number) => (step === 7 * DAY ? weekStart(ms) : Math.floor(ms / step) * step)
  const last = floor(now.getTime())
  const first = count === null ? floor(Date.parse(snapshots[0]!.as_of)) : last - (count - 1) * step
  const points: { t: string; weights: Map<string, number> }[] = []
  for (let b = first; b <= last; b += step) {
    const closes = Math.min(b + step - 1, now.getTime())
    const snapshot = snapshots.findLast((s) => Date.parse(s.as_of) <= closes)
    if (!snapshot) continue
    const weights = new Map<string, number>()
    for (const p of snapshot.positions) weights.set(p[groupBy], (weights.get(p[groupBy]) ?? 0) + p.pct)
    points.push({ t: new Date(b).toISOString(), weights })
  }
  const newest = points.at(-1)!.weights
  const labels = [...new Set(points.flatMap((p) => [...p.weights.keys()]))].sort((a, b) => (newest.get(b) ?? 0) - (newest.get(a) ?? 0) || (a < b ? -1 : 1))
  return { group_by: groupBy, timeframe, labels, points: points.map((p) => ({ t: p.t, weights_pct: labels.map((l) => close(p.weights.get(l) ?? 0)) })) }
}

describe(`vault reads on the demo data (${testBackend})`, () => {
  let t: TestApp
  let doc: ImportDocument
  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => now })
    doc = generateDemoDataset({ now: seededAt })
    expect((await seedDemoIfEmpty(t.db.prisma, { now: seededAt })).seeded).toBe(true)
  })
  afterAll(() => t.close())

  const get = async (path: string) => {
    const res = await t.request(path)
    expect(res.status, path).toBe(200)
    return res.json()
  }
  const snapshotsOf = (id: string) => doc.compositions.filter((c) => c.vault_id === id).sort((a, b) => Date.parse(a.as_of) - Date.parse(b.as_of))

  it('lists every vault, and answers each one, exactly as loaded', async () => {
    const vaults = [...doc.vaults].sort((a, b) => (a.id < b.id ? -1 : 1))
    expect(await get('/v1/vaults?limit=200')).toEqual({ items: vaults.map(wire), next_cursor: null })
    for (const v of doc.vaults) expect(await get(`/v1/vaults/${v.id}`)).toEqual(wire(v))
  })

  it('answers each vault composition by platform and by asset from its latest snapshot', async () => {
    for (const v of doc.vaults) {
      const latest = snapshotsOf(v.id).at(-1)!
      for (const groupBy of ['platform', 'asset'] as const) {
        const expected = referenceGroups(latest.positions, groupBy).map((p) => ({ ...p, pct: close(p.pct), apy_est_pct: close(p.apy_est_pct) }))
        expect(await get(`/v1/vaults/${v.id}/composition?group_by=${groupBy}`), `${v.id} ${groupBy}`).toEqual({ as_of: latest.as_of, positions: expected })
      }
    }
    // The demo has groups whose members differ.
    expect(JSON.stringify(await get('/v1/vaults/op-usdt-stable/composition?group_by=asset'))).toContain('"platform":"mixed"')
  })

  it('answers every series as a scan of all snapshots would', async () => {
    for (const id of ['usdc-prime', 'dai-savings-legacy', 'base-weth-lrt'])
      for (const timeframe of ['7d', '30d', '1y', 'all'] as const)
        for (const groupBy of ['platform', 'asset'] as const) {
          const body = await get(`/v1/vaults/${id}/composition/series?timeframe=${timeframe}&group_by=${groupBy}`)
          expect(body, `${id} ${timeframe} ${groupBy}`).toEqual(referenceSeries(snapshotsOf(id), timeframe, groupBy))
        }
    // A full year of history fills every bucket of the fixed windows.
    for (const [timeframe, n] of [
      ['7d', 168],
      ['30d', 120],
      ['1y', 365],
    ] as const)
      expect((await get(`/v1/vaults/usdc-prime/composition/series?timeframe=${timeframe}`)).points, timeframe).toHaveLength(n)
  })

  it('shows the performance history at once: the spike flagged in the 30d and 1y series, a vault losing money, fresh data', async () => {
    // 23:00 UTC: the last snapshot of its 6-hour and of its day bucket (a point's t is its bucket's start).
    expect(demoSpikeTime(seededAt).toISOString()).toBe('2026-11-11T23:00:00.000Z')
    for (const [timeframe, bucket] of [
      ['30d', '2026-11-11T18:00:00.000Z'],
      ['1y', '2026-11-11T00:00:00.000Z'],
    ]) {
      const { points } = await get(`/v1/vaults/${DEMO_SPIKE.vaultId}/performance/series?timeframe=${timeframe}`)
      const flagged = points.filter((p: { flags?: string[] }) => p.flags)
      expect(
        flagged.map((p: { t: string; share_price: string; apy_7d_pct: number | null; flags: string[] }) => [p.t, p.apy_7d_pct, p.flags]),
        timeframe,
      ).toEqual([[bucket, null, ['spike']]])
    }
    const apy = async (id: string) => (await get(`/v1/vaults/${id}/performance`)).apy_pct
    expect((await apy('hyper-wbtc-carry'))['1y']).toBeLessThan(0)
    for (const id of ['usdc-prime', 'weth-staking-plus', 'base-usdc-flex']) {
      const { '7d': week, '1y': year, inception } = await apy(id)
      for (const value of [week, year, inception]) expect(value, id).toBeGreaterThan(0)
    }
    // Seeded at its own `now`: its data is as new as that, and 37 minutes old here.
    expect(await get('/v1/status')).toEqual({ data_as_of: seededAt.toISOString(), last_import_at: seededAt.toISOString(), sources: [], stale: false })
  })
})
