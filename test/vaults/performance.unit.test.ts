import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Decimal } from '../../src/core/decimal.js'
import { APY_WINDOWS, apy7dSeries, apyWindows, isSpike, type PricePoint, realizedApyPct, spikeFlags, tvlUsd } from '../../src/vaults/performance.js'

const DAY = 86_400_000
const T0 = Date.parse('2025-01-01T00:00:00.000Z')
const at = (days: number, sharePrice: string): PricePoint => ({ asOf: new Date(T0 + days * DAY), sharePrice })

// Enough digits that a 19-digit price times a 200-digit factor never rounds.
const ExactDecimal = Decimal.clone({ precision: 1000 })

describe('realizedApyPct', () => {
  // Expected values computed independently with Python's decimal module at 50 digits:
  // ((p1 / p0) ** (365 / days) - 1) * 100, then rounded to 6 decimals.
  it.each([
    ['1', '1.01', 365, 1], // a year: the plain return
    ['1', '1.1', 365, 10],
    ['1', '1.05', 182.5, 10.25], // half a year compounds twice: 1.05² = 1.1025
    ['1', '1.001', 7, 5.349879], // 5.34987872326798…
    ['1.05', '1.0512', 30, 1.399383], // 1.39938320657738…
    ['2', '1.98', 90, -3.994019], // a loss: -3.99401909871824…
    ['1', '1.0002', 1, 7.572269], // 7.57226851573264…
    ['1', '0.9', 365, -10],
    ['1.5', '0', 30, -100], // the share price fell to nothing
    ['1', '1', 7, 0],
  ])('%s → %s over %s days = %s %%', (p0, p1, days, expected) => {
    expect(realizedApyPct(at(0, p0), at(days, p1))).toBe(expected)
  })

  it('keeps the digits of an 18-decimal share price (the excess is exact before it becomes a double)', () => {
    // 1e-18 relative over a day = 3.65e-14 %: positive before rounding, 0 after; never negative.
    expect(realizedApyPct(at(0, '1.000000000000000001'), at(1, '1.000000000000000002'))).toBe(0)
    // 1e-7 relative over a day: 0.00365006643… %, from prices whose 18th decimal matters.
    expect(realizedApyPct(at(0, '1'), at(1, '1.0000001'))).toBe(0.00365)
    expect(realizedApyPct(at(0, '123456789.123456789123456789'), at(1, '123456801.469135701469135701'))).toBe(0.00365)
  })

  it('is null without s0, with a zero s0 price, for no elapsed time, and beyond a JSON number', () => {
    expect(realizedApyPct(null, at(7, '1'))).toBeNull()
    expect(realizedApyPct(at(0, '0'), at(7, '1'))).toBeNull()
    expect(realizedApyPct(at(1, '1'), at(1, '2'))).toBeNull()
    expect(realizedApyPct(at(0, '1'), at(1, '10000000000'))).toBeNull() // 10^3650
  })
})

describe('spike flags', () => {
  it('flags a move of more than SPIKE_PCT percent from the previous snapshot, either way', () => {
    expect(isSpike(null, '100', 50)).toBe(false) // the first snapshot
    expect(isSpike('1', '1.5', 50)).toBe(false) // exactly 50 % is not more
    expect(isSpike('1', '1.500000000000000001', 50)).toBe(true)
    expect(isSpike('1', '0.5', 50)).toBe(false)
    expect(isSpike('1', '0.499999999999999999', 50)).toBe(true)
    expect(isSpike('2', '2.5', 20)).toBe(true) // 25 % > 20 %
    expect(isSpike('0', '0', 50)).toBe(false)
    expect(isSpike('0', '0.000000000000000001', 50)).toBe(true) // from 0 every move is infinite
    expect(isSpike('1', '1000', 0)).toBe(false) // SPIKE_PCT=0: off
  })

  it('compares each snapshot with the one just before it, flagged or not', () => {
    // A spike up and straight back: the way back is -66.7 %, flagged too; a +100 % spike's way back is -50 %, not.
    expect(spikeFlags([at(0, '1'), at(1, '3'), at(2, '1'), at(3, '1.01')], 50)).toEqual([false, true, true, false])
    expect(spikeFlags([at(0, '1'), at(1, '2'), at(2, '1')], 50)).toEqual([false, true, false])
    // A lasting drop (a loss) flags one point; the points after it compare with it.
    expect(spikeFlags([at(0, '1'), at(1, '0.3'), at(2, '0.31'), at(3, '0.32')], 50)).toEqual([false, true, false, false])
  })
})

describe('apyWindows', () => {
  // Hourly-ish history: a price that grows 1 % a day… measured only where snapshots exist.
  const history = [at(0, '1'), at(300, '1.2'), at(358, '1.25'), at(388, '1.3'), at(394, '1.31'), at(400, '1.32'), at(401, '1.3201')]

  it('takes s0 at or before s1 − W, and null where history does not reach back (never 0)', () => {
    const apy = apyWindows(history, 50)
    expect(apy).toEqual({
      '1d': realizedApyPct(at(400, '1.32'), at(401, '1.3201')), // exactly one day back
      '7d': realizedApyPct(at(394, '1.31'), at(401, '1.3201')), // exactly 7 days back
      '30d': realizedApyPct(at(358, '1.25'), at(401, '1.3201')), // 401 − 30 = 371: the newest at or before is day 358
      '90d': realizedApyPct(at(300, '1.2'), at(401, '1.3201')),
      '1y': realizedApyPct(at(0, '1'), at(401, '1.3201')), // 401 − 365 = 36: day 0
      inception: realizedApyPct(at(0, '1'), at(401, '1.3201')),
    })
    expect(apy['7d']).toBe(49.253439) // (1.3201 / 1.31)^(365/7) − 1 = 49.25343874706…, checked with Python's decimal
    expect(apyWindows(history.slice(3), 50)).toMatchObject({ '90d': null, '1y': null }) // starts at day 388
  })

  it('inception is null until the first snapshot lies a day before s1; a lone snapshot has no APY at all', () => {
    expect(apyWindows([at(0, '1')], 50)).toEqual({ '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null })
    expect(apyWindows([at(0, '1'), at(0.99, '1.01')], 50).inception).toBeNull()
    expect(apyWindows([at(0, '1'), at(1, '1.01')], 50)).toMatchObject({ '1d': realizedApyPct(at(0, '1'), at(1, '1.01')), inception: 3678.343433 })
    expect(apyWindows([], 50).inception).toBeNull()
  })

  it('leaves flagged snapshots out, as s1 and as s0', () => {
    // Day 7 spikes, so s1 is day 6. 1d looks at or before day 5: day 5 (9 → 1.004) and day 0.5 (1 → 9) are flagged, day 0 is not.
    const points = [at(0, '1'), at(0.5, '9'), at(5, '1.004'), at(6, '1.005'), at(7, '5')]
    expect(spikeFlags(points, 50)).toEqual([false, true, true, false, true])
    const fromDay0 = realizedApyPct(at(0, '1'), at(6, '1.005'))
    expect(apyWindows(points, 50)).toEqual({ '1d': fromDay0, '7d': null, '30d': null, '90d': null, '1y': null, inception: fromDay0 })
    // With SPIKE_PCT=1000 nothing is flagged: s1 is day 7 and 1d's s0 day 6.
    expect(apyWindows(points, 1000)['1d']).toBe(realizedApyPct(at(6, '1.005'), at(7, '5')))
  })

  it('skipping a flagged s0 falls back to the unflagged snapshot before it', () => {
    const points = [at(0, '1'), at(1, '1.001'), at(2, '3'), at(3, '1.002'), at(9, '1.01')]
    // 9 − 7 = 2: day 2 is a spike (and day 3, back from it, too): s0 = day 1.
    expect(apyWindows(points, 50)['7d']).toBe(realizedApyPct(at(1, '1.001'), at(9, '1.01')))
  })
})

describe('apy7dSeries', () => {
  it('gives each point the 7-day APY as of its own snapshot, null on spikes and before 7 days of history', () => {
    const points = [at(0, '1'), at(3, '1.001'), at(7, '1.002'), at(8, '4'), at(14, '1.004'), at(15, '1.005')]
    expect(apy7dSeries(points, 50)).toEqual([
      null,
      null,
      realizedApyPct(points[0], points[2]!),
      null, // the spike itself
      null, // 4 → 1.004 is a -75 % move: flagged as well
      realizedApyPct(points[2], points[5]!), // 15 − 7 = 8 is flagged: day 7
    ])
  })
})

describe('tvlUsd', () => {
  it('is tvl × price, exact, rounded once half away from zero to 18 decimals; null without a price', () => {
    expect(tvlUsd('1234.5', '0.999')).toBe('1233.2655')
    expect(tvlUsd('123456789012345678901234567890.123456789012345678', '1.000000000000000001')).toBe('123456789012345679024691356902.469135690246913568') // …902.469135690246913568123456789012 exactly (Python's decimal), rounded down at the 18th decimal
    expect(tvlUsd('0.000000000000000001', '0.5')).toBe('0.000000000000000001')
    expect(tvlUsd('0.000000000000000001', '0.4')).toBe('0')
    expect(tvlUsd('0', '3000')).toBe('0')
    expect(tvlUsd('100', null)).toBeNull()
  })

  it('matches an independent BigInt product', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.bigInt({ min: 0n, max: 10n ** 24n }), (a, b) => {
        const s = (x: bigint) => {
          const t = x.toString().padStart(19, '0')
          return `${t.slice(0, -18)}.${t.slice(-18)}`
        }
        // a/1e18 × b/1e18 = ab/1e36, rounded half up to 1e-18: (ab + 5e17) / 1e18 as an integer count of 1e-18.
        const rounded = (a * b + 5n * 10n ** 17n) / 10n ** 18n
        expect(tvlUsd(s(a), s(b))).toBe(new Decimal(s(rounded)).toFixed())
      }),
    )
  })
})

// ---------------------------------------------------------------------------------------------
// Properties over generated histories (fast-check: seeded, shrinking, reproducible).

/** Strictly increasing times with gaps from a minute to 40 days; `prices` decides the share prices. */
const history = (prices: fc.Arbitrary<string[]>) =>
  fc.integer({ min: 2, max: 60 }).chain((n) =>
    fc
      .tuple(
        fc.array(fc.integer({ min: 60_000, max: 40 * DAY }), { minLength: n, maxLength: n }),
        prices.map((p) => p.slice(0, n)),
      )
      .filter(([, p]) => p.length === n)
      .map(([gaps, p]) => {
        let t = T0
        return gaps.map((g, i) => ({ asOf: new Date((t += g)), sharePrice: p[i]! }))
      }),
  )

/** A decimal string with up to 18 fractional digits, from 1e-18 to ~1e6. */
const price = fc.bigInt({ min: 1n, max: 10n ** 24n }).map((x) => new Decimal(x.toString()).div('1e18').toFixed())
const prices = fc.array(price, { minLength: 60, maxLength: 60 })
const nonDecreasing = prices.map((p) =>
  p
    .map((x) => new Decimal(x))
    .sort((a, b) => a.comparedTo(b))
    .map((d) => d.toFixed()),
)
const spikePct = fc.constantFrom(0, 5, 50, 200)

describe('properties', () => {
  it('a non-decreasing share price never gives a negative APY', () => {
    fc.assert(
      fc.property(history(nonDecreasing), spikePct, (points, spike) => {
        for (const v of Object.values(apyWindows(points, spike))) if (v !== null) expect(v).toBeGreaterThanOrEqual(0)
        for (const v of apy7dSeries(points, spike)) if (v !== null) expect(v).toBeGreaterThanOrEqual(0)
      }),
    )
  })

  it('a flat share price gives exactly 0 wherever history reaches back, and never a spike', () => {
    fc.assert(
      fc.property(history(price.map((p) => Array(60).fill(p))), spikePct, (points, spike) => {
        expect(spikeFlags(points, spike).some(Boolean)).toBe(false)
        const apy = apyWindows(points, spike)
        for (const v of Object.values(apy)) expect(v === null || v === 0).toBe(true)
        const span = points.at(-1)!.asOf.getTime() - points[0]!.asOf.getTime()
        expect(apy.inception).toBe(span >= DAY ? 0 : null)
      }),
    )
  })

  it('scaling every share price by one factor changes no APY and no flag', () => {
    const factor = fc.oneof(
      fc.bigInt({ min: 1n, max: 10n ** 12n }).map(String),
      fc.integer({ min: -18, max: 18 }).map((k) => new Decimal(10).pow(k).toFixed()),
      fc.bigInt({ min: 1n, max: 10n ** 12n }).map((x) => new Decimal(x.toString()).div(7).toFixed()), // a long fraction
    )
    fc.assert(
      fc.property(history(prices), factor, spikePct, (points, c, spike) => {
        // The product must be exact: at 200 digits (src/core/decimal.ts) a long fraction times 16
        // rounds, and a move of exactly SPIKE_PCT would then flip — the rule is exact, the input was not.
        const scaled = points.map((p) => ({ ...p, sharePrice: new ExactDecimal(p.sharePrice as string).times(c).toFixed() }))
        expect(spikeFlags(scaled, spike)).toEqual(spikeFlags(points, spike))
        expect(apyWindows(scaled, spike)).toEqual(apyWindows(points, spike))
        expect(apy7dSeries(scaled, spike)).toEqual(apy7dSeries(points, spike))
      }),
      {
        // Found by CI (stop 23): a move of exactly 50 % (16 → 8 units), times 3428044566 / 7.
        examples: [
          [
            ['1', '16', '8'].map((units, i) => ({ asOf: new Date(T0 + (i + 1) * 60_000), sharePrice: new Decimal(units).div('1e18').toFixed() })),
            new Decimal('23996311967').div(7).toFixed(),
            50,
          ],
        ],
      },
    )
  })

  it('every window is null when no unflagged snapshot lies W before s1', () => {
    fc.assert(
      fc.property(history(prices), spikePct, (points, spike) => {
        const flags = spikeFlags(points, spike)
        const kept = points.filter((_, i) => !flags[i])
        const s1 = kept.at(-1)!
        const apy = apyWindows(points, spike)
        for (const w of APY_WINDOWS) {
          const reach = { '1d': 1, '7d': 7, '30d': 30, '90d': 90, '1y': 365 }[w] * DAY
          const hasS0 = kept.some((p) => p.asOf.getTime() <= s1.asOf.getTime() - reach)
          if (!hasS0) expect(apy[w]).toBeNull()
        }
      }),
    )
  })
})
