import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { seriesWindow, TIMEFRAMES, type Timeframe } from '../../src/vaults/composition.js'
import { apy7dSeries, apyWindows, type PricePoint, realizedApyPct, spikeFlags, tvlUsd } from '../../src/vaults/performance.js'
import { loadPerformance, loadPerformanceSeries } from '../../src/vaults/store.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { vaultDoc } from '../support/wallet-data.js'

// The SQL of src/vaults/store.ts against the reference rules of src/vaults/performance.ts, on
// generated histories: spikes, gaps, snapshots after now, windows that do and do not reach back.

const HOUR = 3_600_000
const DAY = 24 * HOUR
const now = new Date('2026-11-21T12:30:00.000Z')

interface Snap {
  as_of: string
  share_price: string
  tvl: string
  base_asset_price_usd: string | null
}

/** What the SQL must answer, from every snapshot of the vault, by the pure rules. */
function expectedPerformance(snaps: Snap[], spikePct: number) {
  const upToNow = snaps.filter((s) => Date.parse(s.as_of) <= now.getTime())
  const newest = upToNow.at(-1)
  if (!newest) return { asOf: null, sharePrice: null, tvl: null, baseAssetPriceUsd: null, tvlUsd: null, apyPct: apyWindows([], spikePct) }
  return {
    asOf: new Date(newest.as_of),
    sharePrice: newest.share_price,
    tvl: newest.tvl,
    baseAssetPriceUsd: newest.base_asset_price_usd,
    tvlUsd: tvlUsd(newest.tvl, newest.base_asset_price_usd),
    apyPct: apyWindows(upToNow.map(point), spikePct),
  }
}

const point = (s: Snap): PricePoint => ({ asOf: new Date(s.as_of), sharePrice: s.share_price })

function expectedSeries(snaps: Snap[], timeframe: Timeframe, spikePct: number) {
  const upToNow = snaps.filter((s) => Date.parse(s.as_of) <= now.getTime())
  if (upToNow.length === 0) return []
  const apy = apy7dSeries(upToNow.map(point), spikePct)
  const flags = spikeFlags(upToNow.map(point), spikePct)
  const w = seriesWindow(timeframe, now)
  const firstMs = Date.parse(upToNow[0]!.as_of)
  const out = []
  for (
    let t = w.firstStart?.getTime() ?? firstMs - ((firstMs - Date.parse('2001-01-01T00:00:00.000Z')) % w.stepMs);
    t <= w.lastStart.getTime();
    t += w.stepMs
  ) {
    let i = -1
    upToNow.forEach((s, j) => {
      if (Date.parse(s.as_of) < t + w.stepMs) i = j
    })
    if (i < 0) continue
    const s = upToNow[i]!
    out.push({
      t: new Date(t),
      sharePrice: s.share_price,
      tvl: s.tvl,
      tvlUsd: tvlUsd(s.tvl, s.base_asset_price_usd),
      apy7dPct: apy[i],
      flags: flags[i] ? ['spike'] : [],
    })
  }
  return out
}

/** Histories of up to 80 snapshots ending around now (some after it), hours to weeks apart, with occasional jumps. */
const history = fc
  .array(
    fc.record({
      gapMs: fc.oneof(fc.integer({ min: 1, max: 6 * HOUR }), fc.integer({ min: HOUR, max: 20 * DAY })),
      move: fc.oneof(
        { weight: 8, arbitrary: fc.integer({ min: -300, max: 600 }) }, // per ten thousand
        { weight: 1, arbitrary: fc.integer({ min: -9000, max: 30000 }) }, // a jump (often a spike)
      ),
      tvl: fc.bigInt({ min: 0n, max: 10n ** 30n }),
      price: fc.option(fc.constantFrom('1', '0.999812', '3012.5', '0.000000000000000001'), { nil: null }),
    }),
    { minLength: 0, maxLength: 80 },
  )
  .map((steps) => {
    const total = steps.reduce((a, s) => a + s.gapMs, 0)
    let t = now.getTime() - total + 3 * DAY // the last few land after now
    let p = 1_000_000_000_000_000_000n // 1.0 in 1e-18
    return steps.map((s) => {
      t += s.gapMs
      p = (p * BigInt(10_000 + s.move)) / 10_000n
      const dec = (x: bigint) => {
        const d = x.toString().padStart(19, '0')
        return `${d.slice(0, -18)}.${d.slice(-18)}`.replace(/\.?0+$/, '') || '0'
      }
      return { as_of: new Date(t).toISOString(), share_price: dec(p), tvl: dec(s.tvl), base_asset_price_usd: s.price }
    })
  })

describe(`performance SQL = the reference rules (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => now })
  })
  afterAll(() => t.close())

  let n = 0
  it('on generated histories, for every window, timeframe and SPIKE_PCT', async () => {
    await fc.assert(
      fc.asyncProperty(history, fc.constantFrom(50, 5, 0), async (snaps, spikePct) => {
        const id = `gen-${n++}`
        await importDocument(
          {
            vaults: [
              vaultDoc(id, {
                tvl: snaps.at(-1)?.tvl ?? '0',
                share_price: snaps.at(-1)?.share_price ?? '1',
                base_asset_price_usd: snaps.at(-1)?.base_asset_price_usd ?? null,
              }),
            ],
            vault_snapshots: snaps.map((s) => ({ vault_id: id, ...s })),
          },
          t.db.prisma,
          { clock: () => new Date(snaps.at(-1)?.as_of ?? now) },
        )
        // A vault without snapshots of its own in the document gets one from its record, at the import's time (now).
        const all = snaps.length > 0 ? snaps : [{ as_of: now.toISOString(), share_price: '1', tvl: '0', base_asset_price_usd: null }]
        const perf = await loadPerformance(t.db.prisma, [id, 'unknown'], { now, spikePct })
        // The basis of each APY gives that APY back (decisions §14), and is null exactly where it is.
        const { apyBasis, ...values } = perf.get(id)!
        expect(values).toEqual(expectedPerformance(all, spikePct))
        for (const [w, basis] of Object.entries(apyBasis)) {
          const apy = values.apyPct[w as keyof typeof apyBasis]
          expect(
            basis === null ? null : realizedApyPct({ asOf: basis.from, sharePrice: basis.sharePriceFrom }, { asOf: basis.to, sharePrice: basis.sharePriceTo }),
          ).toBe(apy)
        }
        const { apyBasis: none, ...unknown } = perf.get('unknown')!
        expect(unknown).toEqual(expectedPerformance([], spikePct))
        expect(Object.values(none).every((b) => b === null)).toBe(true)
        for (const timeframe of TIMEFRAMES) {
          const series = await loadPerformanceSeries(t.db.prisma, [id], { window: seriesWindow(timeframe, now), spikePct })
          expect(series.get(id)).toEqual(expectedSeries(all, timeframe, spikePct))
        }
      }),
      { numRuns: 30 },
    )
  })
})
