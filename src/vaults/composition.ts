import { Decimal } from '../core/decimal.js'
import { badRequest } from '../core/errors.js'

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
// Series windows (decisions §6, §9, §14): a timeframe is a range ending now; both become one
// SeriesWindow, and one SQL statement lays its buckets out (src/vaults/store.ts seriesGrid).

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** The steps a range may ask for (decisions §14), and their lengths. */
export const INTERVALS = ['1h', '6h', '1d', '1w'] as const
export type Interval = (typeof INTERVALS)[number]
export const INTERVAL_MS: Record<Interval, number> = { '1h': HOUR, '6h': 6 * HOUR, '1d': DAY, '1w': 7 * DAY }

/** At most this many buckets in a series asked for by range (decisions §14). */
export const MAX_POINTS = 1000

/**
 * Bucket size and count per timeframe. Buckets sit on a fixed grid so that a series only changes
 * when a bucket boundary passes or a snapshot arrives (HTTP caching works); the newest bucket is
 * the one holding `now`. `all` starts at the bucket holding the vault's first snapshot.
 */
export const TIMEFRAME_BUCKETS: Record<Timeframe, { stepMs: number; count: number | null }> = {
  '7d': { stepMs: INTERVAL_MS['1h'], count: 168 },
  '30d': { stepMs: INTERVAL_MS['6h'], count: 120 },
  '1y': { stepMs: INTERVAL_MS['1d'], count: 365 },
  all: { stepMs: INTERVAL_MS['1w'], count: null },
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
  /** Start of the newest bucket: the last one that starts before the end and not after now. */
  lastStart: Date
  /**
   * Where the window ends, exclusive: a point carries the last snapshot taken before
   * min(t + step, end). `to`, or just past now (storage keeps milliseconds, so "before now + 1 ms"
   * is "at or before now"), whichever comes first.
   */
  end: Date
}

/**
 * The one window rule (decisions §14): buckets [t, t + step) on the grid, from the one holding
 * `fromMs` (null: the vault's first snapshot) to the last that starts before `toMs` (null: no end
 * but now) and not after now.
 */
function gridWindow(stepMs: number, fromMs: number | null, toMs: number | null, now: Date): SeriesWindow {
  const end = Math.min(toMs ?? Number.POSITIVE_INFINITY, now.getTime() + 1)
  return {
    stepMs,
    firstStart: fromMs === null ? null : new Date(floorToBucket(fromMs, stepMs)),
    lastStart: new Date(floorToBucket(end - 1, stepMs)),
    end: new Date(end),
  }
}

/** A window's bucket count (0 when it starts after its last bucket); null for an open start. */
export function bucketCount(w: SeriesWindow): number | null {
  if (w.firstStart === null) return null
  return Math.max(0, (w.lastStart.getTime() - w.firstStart.getTime()) / w.stepMs + 1)
}

/** A timeframe: the range of its bucket count ending now (`all`: from the first snapshot). */
export function seriesWindow(timeframe: Timeframe, now: Date): SeriesWindow {
  const { stepMs, count } = TIMEFRAME_BUCKETS[timeframe]
  const from = count === null ? null : floorToBucket(now.getTime(), stepMs) - (count - 1) * stepMs
  return gridWindow(stepMs, from, null, now)
}

/** What a series was asked for: a timeframe, or a range (`to` null: now; `interval` null: the default). */
export type SeriesRequest = { timeframe: Timeframe } | { from: Date; to: Date | null; interval: Interval | null }

/**
 * A series request from its parameters (REST query or GraphQL arguments), or `bad_request` naming
 * the parameter: `timeframe` together with a range, `to` or `interval` without `from`. Neither:
 * the 30d timeframe. `rangeName`: what the API calls the range (`from` in REST, `range` in GraphQL).
 */
export function seriesRequest(
  input: { timeframe?: Timeframe | null; from?: Date | null; to?: Date | null; interval?: Interval | null },
  rangeName: 'from' | 'range' = 'from',
): SeriesRequest {
  const { timeframe, from, to, interval } = input
  if (from == null) {
    if (to != null) throw badRequest('from is required when to is given.')
    if (interval != null) throw badRequest('from is required when interval is given.')
    return { timeframe: timeframe ?? '30d' }
  }
  if (timeframe != null) throw badRequest(`timeframe must not be given together with ${rangeName}: a range has its own from, to and interval.`)
  return { from, to: to ?? null, interval: interval ?? null }
}

/** A checked series request: its window and what the answer echoes (decisions §14). */
export interface SeriesSpec {
  window: SeriesWindow
  timeframe: Timeframe | null
  /** A range's own values (null for a timeframe): `to` is now when it was left out, `interval` the one used. */
  from: Date | null
  to: Date | null
  interval: Interval | null
}

/**
 * The window of a series request at `now`, or `bad_request` naming the parameter: `from` not
 * before `to`, or more than MAX_POINTS buckets between `from` and min(to, now) (at the interval
 * asked for; without one, at the smallest interval that fits).
 */
export function seriesSpec(request: SeriesRequest, now: Date): SeriesSpec {
  if ('timeframe' in request) return { window: seriesWindow(request.timeframe, now), timeframe: request.timeframe, from: null, to: null, interval: null }
  const from = request.from.getTime()
  const to = request.to?.getTime() ?? now.getTime()
  if (from >= to) throw badRequest(`from must be earlier than to (${request.to === null ? 'now, ' : ''}${new Date(to).toISOString()}).`)
  const fits = (interval: Interval) => (bucketCount(gridWindow(INTERVAL_MS[interval], from, to, now)) ?? 0) <= MAX_POINTS
  const interval = request.interval ?? INTERVALS.find(fits)
  if (interval === undefined)
    throw badRequest(
      `from is too far back: even interval 1w gives more than ${MAX_POINTS} points up to ${new Date(Math.min(to, now.getTime())).toISOString()}.`,
    )
  const window = gridWindow(INTERVAL_MS[interval], from, to, now)
  const count = bucketCount(window)!
  if (count > MAX_POINTS)
    throw badRequest(
      `interval ${interval} gives ${count} points between from and min(to, now); at most ${MAX_POINTS} are allowed: choose a larger interval or a shorter range.`,
    )
  return { window, timeframe: null, from: request.from, to: new Date(to), interval }
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
