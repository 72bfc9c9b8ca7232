import DataLoader from 'dataloader'
import { prisma, type Db } from '../db/client.js'
import { Decimal } from '../core/decimal.js'

// Composition rules (decisions.md §6): the current composition grouped by platform or asset, and
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
  asOf: Date
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
  const labels = [...new Set(points.flatMap((p) => [...p.weights.keys()]))].sort(
    (a, b) => (newest.get(b) ?? 0) - (newest.get(a) ?? 0) || compareNames(a, b),
  )
  return { labels, points: points.map((p) => ({ t: p.t, weightsPct: labels.map((l) => p.weights.get(l) ?? 0) })) }
}

// ---------------------------------------------------------------------------------------------
// Queries: each serves many vaults in one statement, so a list of vaults costs the same as one.

interface LatestRow {
  vault_id: string
  as_of: Date
  platform: string | null
  asset: string | null
  symbol: string | null
  pct: number | null
  apy_est_pct: number | null
  icon: string | null
}

// The lateral subquery walks the (vault_id, as_of desc) index: one probe per vault. Allocations
// are left-joined so a snapshot without positions still counts as the current one.
const LATEST_SQL = `SELECT v.id AS vault_id, s.as_of, a.platform, a.asset, a.symbol, a.pct, a.apy_est_pct, a.icon
  FROM jsonb_array_elements_text($1::jsonb) AS v(id)
  CROSS JOIN LATERAL (
    SELECT cs.id, cs.as_of FROM composition_snapshots cs
    WHERE cs.vault_id = v.id AND cs.as_of <= $2::timestamptz
    ORDER BY cs.as_of DESC LIMIT 1
  ) s
  LEFT JOIN allocations a ON a.snapshot_id = s.id`

/** Each vault's latest snapshot at or before `now` (its allocations ungrouped); absent when it has none. */
export async function loadLatestSnapshots(vaultIds: readonly string[], now: Date, db: Db = prisma): Promise<Map<string, { asOf: Date; allocations: Allocation[] }>> {
  const rows = await db.$queryRawUnsafe<LatestRow[]>(LATEST_SQL, JSON.stringify(vaultIds), now.toISOString())
  const out = new Map<string, { asOf: Date; allocations: Allocation[] }>()
  for (const r of rows) {
    let snapshot = out.get(r.vault_id)
    if (!snapshot) out.set(r.vault_id, (snapshot = { asOf: r.as_of, allocations: [] }))
    if (r.platform !== null)
      snapshot.allocations.push({ platform: r.platform, asset: r.asset!, symbol: r.symbol!, pct: r.pct!, apyEstPct: r.apy_est_pct!, icon: r.icon! })
  }
  return out
}

/**
 * One statement for the whole series of many vaults: generate_series lays out each vault's buckets
 * (`all` from the bucket of its first snapshot; fixed windows no earlier than it either, since
 * earlier buckets have no point), and for each bucket a lateral probe of the (vault_id, as_of desc)
 * index finds the last snapshot taken before the bucket closes. Buckets are half-open,
 * [t, t + step), so a snapshot on a boundary belongs to the bucket it opens, not to the one before;
 * the newest bucket closes at now. Buckets before the first snapshot find none and drop out.
 * Weights are summed per group as exact numerics and rounded once. Intervals are given in
 * milliseconds, never days, so no time zone or daylight-saving rule can stretch a bucket.
 */
const seriesSql = (groupBy: GroupBy) => `WITH v AS (
    SELECT v.id, (SELECT min(cs.as_of) FROM composition_snapshots cs WHERE cs.vault_id = v.id) AS first_as_of
    FROM jsonb_array_elements_text($1::jsonb) AS v(id)
  ), b AS (
    SELECT v.id AS vault_id, g.t
    FROM v
    CROSS JOIN LATERAL generate_series(
      greatest($3::timestamptz, date_bin($2::interval, v.first_as_of, $6::timestamptz)),
      $4::timestamptz,
      $2::interval
    ) AS g(t)
    WHERE v.first_as_of IS NOT NULL
  )
  SELECT b.vault_id, b.t, a.${groupBy} AS label, round(sum(a.pct::numeric), ${PCT_DECIMALS})::float8 AS weight
  FROM b
  CROSS JOIN LATERAL (
    SELECT cs.id FROM composition_snapshots cs
    WHERE cs.vault_id = b.vault_id AND cs.as_of < b.t + $2::interval AND cs.as_of <= $5::timestamptz
    ORDER BY cs.as_of DESC LIMIT 1
  ) s
  LEFT JOIN allocations a ON a.snapshot_id = s.id
  GROUP BY b.vault_id, b.t, a.${groupBy}
  ORDER BY b.vault_id, b.t`

/** The composition series of each vault (vaults without snapshots get no labels and no points). */
export async function loadCompositionSeries(
  vaultIds: readonly string[],
  { timeframe, groupBy, now }: { timeframe: Timeframe; groupBy: GroupBy; now: Date },
  db: Db = prisma,
): Promise<Map<string, Series>> {
  if (!GROUP_BYS.includes(groupBy)) throw new Error(`unknown groupBy ${String(groupBy)}`) // it is spliced into the SQL
  const w = seriesWindow(timeframe, now)
  const rows = await db.$queryRawUnsafe<SeriesRow[]>(
    seriesSql(groupBy),
    JSON.stringify(vaultIds),
    `${w.stepMs} milliseconds`,
    w.firstStart?.toISOString() ?? null,
    w.lastStart.toISOString(),
    w.end.toISOString(),
    BUCKET_ORIGIN.toISOString(),
  )
  const byVault = new Map<string, SeriesRow[]>()
  for (const r of rows) byVault.get(r.vault_id)?.push(r) ?? byVault.set(r.vault_id, [r])
  return new Map(vaultIds.map((id) => [id, assembleSeries(byVault.get(id) ?? [])]))
}

// ---------------------------------------------------------------------------------------------
// Per-request loaders

export interface LatestKey {
  vaultId: string
  now: Date
}

export interface SeriesKey {
  vaultId: string
  timeframe: Timeframe
  groupBy: GroupBy
  now: Date
}

/** Keys of one batch that can share a statement, by `batchOf`. */
function partition<K>(keys: readonly K[], batchOf: (key: K) => string): Map<string, K[]> {
  const batches = new Map<string, K[]>()
  for (const k of keys) batches.get(batchOf(k))?.push(k) ?? batches.set(batchOf(k), [k])
  return batches
}

export function compositionLoaders() {
  return {
    /** A vault's latest snapshot at or before the request's now, or null. */
    latestSnapshot: new DataLoader<LatestKey, { asOf: Date; allocations: Allocation[] } | null, string>(
      async (keys) => {
        const found = new Map<string, { asOf: Date; allocations: Allocation[] }>()
        for (const [now, batch] of partition(keys, (k) => k.now.toISOString())) {
          const snapshots = await loadLatestSnapshots([...new Set(batch.map((k) => k.vaultId))], new Date(now))
          for (const [id, s] of snapshots) found.set(`${now} ${id}`, s)
        }
        return keys.map((k) => found.get(`${k.now.toISOString()} ${k.vaultId}`) ?? null)
      },
      { cacheKeyFn: (k) => `${k.now.toISOString()} ${k.vaultId}` },
    ),
    /** A vault's composition series; vaults asking for the same timeframe and grouping share one statement. */
    compositionSeries: new DataLoader<SeriesKey, Series, string>(
      async (keys) => {
        const found = new Map<string, Series>()
        const batchOf = (k: SeriesKey) => `${k.timeframe} ${k.groupBy} ${k.now.toISOString()}`
        for (const [batch, members] of partition(keys, batchOf)) {
          const { timeframe, groupBy, now } = members[0]!
          const series = await loadCompositionSeries([...new Set(members.map((k) => k.vaultId))], { timeframe, groupBy, now })
          for (const [id, s] of series) found.set(`${batch} ${id}`, s)
        }
        return keys.map((k) => found.get(`${batchOf(k)} ${k.vaultId}`)!)
      },
      { cacheKeyFn: (k) => `${k.timeframe} ${k.groupBy} ${k.now.toISOString()} ${k.vaultId}` },
    ),
  }
}
