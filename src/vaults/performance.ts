import { AMOUNT_SCALE, Decimal, type DecimalLike } from '../core/decimal.js'
import { PCT_DECIMALS } from './composition.js'

// Vault performance (docs/spec/decisions.md §9): realized APY windows from share prices, USD TVL
// and spike flags. Pure functions over snapshots; src/vaults/performance-store.ts finds the
// snapshots they need in SQL (the same rules, checked against these functions in
// test/vaults/performance.test.ts).
//
// Precision (docs/api/vaults.md "Performance history"):
//  - Share prices and TVL are exact decimals. The spike test compares exact decimals.
//  - The APY is a JSON number (a percent). The price ratio's excess r − 1 = (p1 − p0) / p0 is
//    computed exactly (integers) and only then rounded to a double, so a tiny move of an
//    18-digit share price keeps its digits; apy = expm1(e × log1p(r − 1)) × 100 with
//    e = 365 days / (t1 − t0), whose relative error is a few units in the last place of a double.
//    It is rounded once to 6 decimals (like every derived percent, PCT_DECIMALS), which also hides
//    last-place differences between platforms' Math.expm1/log1p.
//  - A value too large for a JSON number (beyond ~1.8e308 %, e.g. a share price that grew
//    10^400-fold over a day) is null: the only null besides a missing s0.
//  - USD TVL = tvl × base_asset_price_usd, exact, rounded once to 18 decimals (decisions §3).

export const APY_WINDOWS = ['1d', '7d', '30d', '90d', '1y'] as const
export type ApyWindow = (typeof APY_WINDOWS)[number]

const DAY = 86_400_000
export const YEAR_MS = 365 * DAY

/** Each window's length; a year is 365 days, as in the formula's exponent. */
export const WINDOW_MS: Record<ApyWindow, number> = { '1d': DAY, '7d': 7 * DAY, '30d': 30 * DAY, '90d': 90 * DAY, '1y': YEAR_MS }

/** `inception` needs its first snapshot at least this long before s1 (decisions §9). */
export const INCEPTION_MIN_MS = DAY

/** The default of SPIKE_PCT. */
export const DEFAULT_SPIKE_PCT = 50

export interface PricePoint {
  asOf: Date
  /** Exact decimal string (or decimal). */
  sharePrice: DecimalLike
}

// Exact arithmetic on plain decimal strings as scaled BigInts: a series of a year is hundreds of
// points, each needing a spike test, an APY ratio and a USD product; decimal.js (200 significant
// digits) spent ~0.3 ms of CPU per point on them, BigInt a few microseconds, with the same results.

const text = (v: DecimalLike) => (typeof v === 'string' ? v : v.toFixed())

/** A plain decimal string as an integer and its count of fractional digits. */
function parse(v: DecimalLike): { n: bigint; scale: number } {
  const s = text(v)
  if (!/^-?\d+(\.\d+)?$/.test(s)) {
    const d = new Decimal(s) // exponent notation (never from the database): normalise first
    return parse(d.toFixed())
  }
  const dot = s.indexOf('.')
  return dot < 0 ? { n: BigInt(s), scale: 0 } : { n: BigInt(s.slice(0, dot) + s.slice(dot + 1)), scale: s.length - dot - 1 }
}

/** Two decimals as integers of one common scale. */
function aligned(a: DecimalLike, b: DecimalLike): [bigint, bigint] {
  const x = parse(a)
  const y = parse(b)
  return x.scale >= y.scale ? [x.n, y.n * 10n ** BigInt(x.scale - y.scale)] : [x.n * 10n ** BigInt(y.scale - x.scale), y.n]
}

const abs = (n: bigint) => (n < 0n ? -n : n)
const bitLength = (n: bigint) => n.toString(2).length

/**
 * n / d as a double: the integer quotient carrying at least 64 significant bits, scaled back by a
 * power of two (exact), so the only rounding is the final one to 53 bits. Scaling n and d by one
 * factor gives the same quotient, hence the same double.
 */
function quotient(n: bigint, d: bigint): number {
  if (n === 0n) return 0
  const negative = n < 0n !== d < 0n
  const an = abs(n)
  const ad = abs(d)
  const shift = Math.max(0, 64 + bitLength(ad) - bitLength(an))
  const q = Number((an << BigInt(shift)) / ad) / 2 ** shift
  return negative ? -q : q
}

/**
 * Whether `price` moved by more than `spikePct` percent from `previous` (|p − prev| × 100 >
 * spikePct × prev, exact). The first snapshot (no previous) is never a spike; from a previous
 * price of 0 every move is one. `spikePct` 0 turns the rule off.
 */
export function isSpike(previous: DecimalLike | null, price: DecimalLike, spikePct: number): boolean {
  if (previous === null || spikePct <= 0) return false
  const [p, prev] = aligned(price, previous)
  if (Number.isInteger(spikePct)) return abs(p - prev) * 100n > BigInt(spikePct) * prev
  const [move, limit] = aligned((abs(p - prev) * 100n).toString(), new Decimal(prev.toString()).times(spikePct).toFixed())
  return move > limit
}

/** Spike flags of a vault's snapshots (oldest first): each compared with the snapshot just before it. */
export function spikeFlags(points: readonly PricePoint[], spikePct: number): boolean[] {
  return points.map((p, i) => isSpike(i === 0 ? null : points[i - 1]!.sharePrice, p.sharePrice, spikePct))
}

/**
 * Rounds a percent once to PCT_DECIMALS, half away from zero (Number#toFixed rounds the double's
 * exact value, ties away from zero); -0 becomes 0 and a value beyond a double becomes null.
 */
function roundPct(x: number): number | null {
  if (!Number.isFinite(x)) return null
  if (Math.abs(x) >= 1e21) return x // an integer already (and toFixed would switch to exponents)
  const r = Number(x.toFixed(PCT_DECIMALS))
  return r === 0 ? 0 : r
}

/**
 * apy_pct = ((p1 / p0) ^ (365 days / (t1 − t0)) − 1) × 100 (decisions §9), rounded to 6 decimals.
 * Null when s0 is missing, when p0 is 0 (no ratio), when t1 is not after t0, or when the value is
 * beyond a JSON number. A share price that fell to 0 answers −100.
 */
export function realizedApyPct(s0: PricePoint | null | undefined, s1: PricePoint): number | null {
  if (!s0) return null
  const dt = s1.asOf.getTime() - s0.asOf.getTime()
  if (dt <= 0) return null
  const [p1, p0] = aligned(s1.sharePrice, s0.sharePrice)
  if (p0 === 0n) return null
  const excess = quotient(p1 - p0, p0) // r − 1: exact until this one rounding
  return roundPct(Math.expm1((YEAR_MS / dt) * Math.log1p(excess)) * 100)
}

/** Index of the newest unflagged point at or before `t` (points oldest first), or -1. */
function newestUnflaggedAtOrBefore(points: readonly PricePoint[], flags: readonly boolean[], t: number, from = points.length - 1): number {
  for (let i = from; i >= 0; i--) if (points[i]!.asOf.getTime() <= t && !flags[i]) return i
  return -1
}

export type ApyPct = Record<ApyWindow | 'inception', number | null>

export const NO_APY: ApyPct = { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null }

/** The two snapshots an APY came from (decisions §14: `apy_basis`), amounts exact. */
export interface ApyBasisEntry {
  from: Date
  to: Date
  sharePriceFrom: string
  sharePriceTo: string
}

export type ApyBasis = Record<ApyWindow | 'inception', ApyBasisEntry | null>

export const NO_BASIS: ApyBasis = { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null }

/** The basis of an APY: its s0 and s1, or null where the APY is null (decisions §14). */
export function basisOf(apy: number | null, s0: { asOf: Date; sharePrice: string } | null, s1: { asOf: Date; sharePrice: string }): ApyBasisEntry | null {
  if (apy === null || s0 === null) return null
  return { from: s0.asOf, to: s1.asOf, sharePriceFrom: s0.sharePrice, sharePriceTo: s1.sharePrice }
}

/**
 * Every APY window of a vault, from its snapshots up to now (oldest first) — the reference the SQL
 * implementation follows: s1 = the newest snapshot not flagged as a spike; s0 = the newest
 * unflagged snapshot at or before s1.as_of − W; inception: the first snapshot, when it lies at
 * least a day before s1. Null, never 0, where s0 does not exist.
 */
export function apyWindows(points: readonly PricePoint[], spikePct: number): ApyPct {
  const flags = spikeFlags(points, spikePct)
  const i1 = newestUnflaggedAtOrBefore(points, flags, Number.POSITIVE_INFINITY)
  if (i1 < 0) return { ...NO_APY }
  const s1 = points[i1]!
  const out = { ...NO_APY }
  for (const w of APY_WINDOWS) {
    const i0 = newestUnflaggedAtOrBefore(points, flags, s1.asOf.getTime() - WINDOW_MS[w], i1)
    out[w] = i0 < 0 ? null : realizedApyPct(points[i0], s1)
  }
  out.inception = inceptionApyPct(points[0]!, s1)
  return out
}

/** The inception APY: the first snapshot as s0, null when it is less than a day before s1. */
export function inceptionApyPct(first: PricePoint, s1: PricePoint): number | null {
  return s1.asOf.getTime() - first.asOf.getTime() < INCEPTION_MIN_MS ? null : realizedApyPct(first, s1)
}

/**
 * The 7-day APY as of each point (oldest first; the series' apy_7d_pct): null on a flagged point
 * and where no unflagged snapshot lies 7 days or more before it.
 */
export function apy7dSeries(points: readonly PricePoint[], spikePct: number): (number | null)[] {
  const flags = spikeFlags(points, spikePct)
  return points.map((p, i) => {
    if (flags[i]) return null
    const i0 = newestUnflaggedAtOrBefore(points, flags, p.asOf.getTime() - WINDOW_MS['7d'], i)
    return i0 < 0 ? null : realizedApyPct(points[i0], p)
  })
}

/** TVL in USD: tvl × the base asset's USD price, exact and rounded once to 18 decimals; null when the price is unknown. */
export function tvlUsd(tvl: DecimalLike, baseAssetPriceUsd: DecimalLike | null | undefined): string | null {
  if (baseAssetPriceUsd === null || baseAssetPriceUsd === undefined) return null
  const a = parse(tvl)
  const b = parse(baseAssetPriceUsd)
  let n = a.n * b.n
  let scale = a.scale + b.scale
  if (scale > AMOUNT_SCALE) {
    const unit = 10n ** BigInt(scale - AMOUNT_SCALE)
    const rounded = (abs(n) + unit / 2n) / unit // half away from zero
    n = n < 0n ? -rounded : rounded
    scale = AMOUNT_SCALE
  }
  if (n === 0n) return '0'
  const digits = abs(n)
    .toString()
    .padStart(scale + 1, '0')
  const int = digits.slice(0, digits.length - scale)
  const frac = digits.slice(digits.length - scale).replace(/0+$/, '')
  return `${n < 0n ? '-' : ''}${int}${frac ? `.${frac}` : ''}`
}
