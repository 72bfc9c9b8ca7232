import { Decimal } from '../core/decimal.js'

// Composition rules (docs/spec/decisions.md §6): the current composition grouped by platform or asset, and
// the series of group weights over a time window, bucketed in SQL.

export const GROUP_BYS = ['platform', 'asset'] as const
export type GroupBy = (typeof GROUP_BYS)[number]

export const TIMEFRAMES = ['7d', '30d', '1y', 'all'] as const
export type Timeframe = (typeof TIMEFRAMES)[number]

/** The value of the other key (and of `symbol` when grouping by platform) when a group's members differ. */
export const MIXED = 'mixed'

/** Derived percentages (group sums, weighted means, series weights) are rounded once to this many decimals. */
export const PCT_DECIMALS = 6

export interface Allocation {
  platform: string
  asset: string
  symbol: string
  pct: number
  apyEstPct: number
  icon: string
}

/** One entry of a grouped composition: the same fields as an allocation. */
export type Position = Allocation

export interface Composition {
  /** Null while the vault has no snapshot (and no positions). */
  asOf: Date | null
  positions: Position[]
}

/** Binary (code point) order: the same on every machine and database collation. */
export const compareNames = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const roundPct = (d: Decimal) => d.toDecimalPlaces(PCT_DECIMALS, Decimal.ROUND_HALF_UP).toNumber()
// String(number) is the shortest text that reads back as the same double: 12.3456, not 12.345600000000001.
const dec = (n: number) => new Decimal(String(n))

/**
 * Groups a snapshot's allocations by platform or by asset: one entry per group with `pct` = the
 * sum, `apy_est_pct` = the pct-weighted mean (the plain mean when the group weighs 0), `icon` =
 * the largest member's; the other key (and `symbol` when grouping by platform) is the members'
 * common value or "mixed". By asset, `symbol` is the largest member's (an asset has one symbol).
 * Sorted by `pct` desc, then name.
 */
export function groupAllocations(allocations: readonly Allocation[], groupBy: GroupBy): Position[] {
  const other = groupBy === 'platform' ? 'asset' : 'platform'
  const groups = new Map<string, Allocation[]>()
  for (const a of allocations) {
    const members = groups.get(a[groupBy])
    if (members) members.push(a)
    else groups.set(a[groupBy], [a])
  }
  const positions: Position[] = []
  for (const [name, members] of groups) {
    const largest = members.reduce((best, m) =>
      m.pct > best.pct || (m.pct === best.pct && (compareNames(m.platform, best.platform) || compareNames(m.asset, best.asset)) < 0) ? m : best,
    )
    const pct = members.reduce((sum, m) => sum.plus(dec(m.pct)), new Decimal(0))
    const apy = pct.isZero()
      ? members.reduce((sum, m) => sum.plus(dec(m.apyEstPct)), new Decimal(0)).div(members.length)
      : members.reduce((sum, m) => sum.plus(dec(m.pct).times(dec(m.apyEstPct))), new Decimal(0)).div(pct)
    const common = (key: 'platform' | 'asset' | 'symbol') => (members.every((m) => m[key] === members[0]![key]) ? members[0]![key] : MIXED)
    positions.push({
      platform: groupBy === 'platform' ? name : common(other),
      asset: groupBy === 'asset' ? name : common(other),
      symbol: groupBy === 'platform' ? common('symbol') : largest.symbol,
      pct: roundPct(pct),
      apyEstPct: roundPct(apy),
      icon: largest.icon,
    })
  }
  return positions.sort((a, b) => b.pct - a.pct || compareNames(a[groupBy], b[groupBy]))
}

// ---------------------------------------------------------------------------------------------
// Series windows

const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * Bucket size and count per timeframe. Buckets sit on a fixed grid so that a series only changes
 * when a bucket boundary passes or a snapshot arrives (HTTP caching works); the newest bucket is
 * the one holding `now`. `all` starts at the bucket holding the vault's first snapshot.
 */
export const TIMEFRAME_BUCKETS: Record<Timeframe, { stepMs: number; count: number | null }> = {
  '7d': { stepMs: HOUR, count: 168 },
  '30d': { stepMs: 6 * HOUR, count: 120 },
  '1y': { stepMs: DAY, count: 365 },
  all: { stepMs: 7 * DAY, count: null },
}

/** The grid's origin: a Monday at midnight UTC, so hours, 6-hour blocks, days and ISO weeks all align. */
export const BUCKET_ORIGIN = new Date('2001-01-01T00:00:00.000Z')

export function floorToBucket(ms: number, stepMs: number): number {
  const origin = BUCKET_ORIGIN.getTime()
  return origin + Math.floor((ms - origin) / stepMs) * stepMs
}

export interface SeriesWindow {
  stepMs: number
  /** Start of the oldest bucket; null for `all` (the bucket of the vault's first snapshot). */
  firstStart: Date | null
  /** Start of the newest bucket, the one holding `now`. */
  lastStart: Date
  /** The window's end: the newest bucket ends here, not at its grid boundary. */
  end: Date
}

export function seriesWindow(timeframe: Timeframe, now: Date): SeriesWindow {
  const { stepMs, count } = TIMEFRAME_BUCKETS[timeframe]
  const lastStart = floorToBucket(now.getTime(), stepMs)
  return {
    stepMs,
    firstStart: count === null ? null : new Date(lastStart - (count - 1) * stepMs),
    lastStart: new Date(lastStart),
    end: now,
  }
}

export interface SeriesRow {
  vault_id: string
  t: Date
  /** Null for a bucket whose snapshot lists no allocations. */
  label: string | null
  weight: number | null
}

export interface Series {
  labels: string[]
  points: { t: Date; weightsPct: number[] }[]
}

/**
 * Assembles one vault's series from its rows (ordered by `t`): `labels` = every group present in
 * the window, ordered by weight in the newest point desc, then name; each point's `weightsPct`
 * aligned with `labels`, 0 where the group is absent.
 */
export function assembleSeries(rows: readonly SeriesRow[]): Series {
  const points: { t: Date; weights: Map<string, number> }[] = []
  for (const row of rows) {
    let point = points.at(-1)
    if (!point || point.t.getTime() !== row.t.getTime()) points.push((point = { t: row.t, weights: new Map() }))
    if (row.label !== null) point.weights.set(row.label, row.weight ?? 0)
  }
  const newest = points.at(-1)?.weights ?? new Map<string, number>()
  const labels = [...new Set(points.flatMap((p) => [...p.weights.keys()]))].sort((a, b) => (newest.get(b) ?? 0) - (newest.get(a) ?? 0) || compareNames(a, b))
  return { labels, points: points.map((p) => ({ t: p.t, weightsPct: labels.map((l) => p.weights.get(l) ?? 0) })) }
}
