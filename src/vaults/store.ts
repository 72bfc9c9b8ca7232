import DataLoader from 'dataloader'
import { prisma, type Db } from '../db/client.js'
import type { Vault } from '../generated/prisma/client.js'
import type { VaultListFilter, VaultPageRequest } from './list.js'
import {
  type Allocation,
  assembleSeries,
  BUCKET_ORIGIN,
  GROUP_BYS,
  type GroupBy,
  PCT_DECIMALS,
  type Series,
  type SeriesRow,
  seriesWindow,
  type Timeframe,
} from './composition.js'

// Every SQL statement about vaults beyond Prisma's own reads (the GraphQL Vault type's
// prismaField resolvers), with the DataLoaders that batch them per request.

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
export async function loadLatestSnapshots(
  vaultIds: readonly string[],
  now: Date,
  db: Db = prisma,
): Promise<Map<string, { asOf: Date; allocations: Allocation[] }>> {
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

// ---------------------------------------------------------------------------------------------
// The vault list

/** One page of the vault list in id order (keyset on the primary key), and whether more lie beyond it. */
export async function findVaultPage(filter: VaultListFilter, page: VaultPageRequest): Promise<{ rows: Vault[]; more: boolean }> {
  const forward = page.direction === 'forward'
  const rows = await prisma.vault.findMany({
    where: {
      chain: filter.chain ?? undefined,
      status: filter.status ?? undefined,
      ...(page.from === null ? {} : { id: forward ? { gt: page.from } : { lt: page.from } }),
    },
    orderBy: { id: forward ? 'asc' : 'desc' },
    take: page.size + 1,
  })
  const more = rows.length > page.size
  const kept = rows.slice(0, page.size)
  return { rows: forward ? kept : kept.reverse(), more }
}
