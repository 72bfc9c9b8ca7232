import DataLoader from 'dataloader'
import { formatAmount } from '../core/decimal.js'
import type { Db } from '../db/client.js'
import type { Vault } from '../generated/prisma/client.js'
import { compareByOrder, type OrderValue, type VaultListFilter, type VaultPageRequest, type VaultPosition } from './list.js'
import {
  type Allocation,
  assembleSeries,
  BUCKET_ORIGIN,
  GROUP_BYS,
  type GroupBy,
  PCT_DECIMALS,
  type Series,
  type SeriesRow,
  type SeriesWindow,
} from './composition.js'
import {
  APY_WINDOWS,
  type ApyPct,
  DEFAULT_SPIKE_PCT,
  type ApyWindow,
  type ApyBasis,
  basisOf,
  inceptionApyPct,
  NO_BASIS,
  isSpike,
  NO_APY,
  realizedApyPct,
  tvlUsd,
  WINDOW_MS,
} from './performance.js'

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
export async function loadLatestSnapshots(db: Db, vaultIds: readonly string[], now: Date): Promise<Map<string, { asOf: Date; allocations: Allocation[] }>> {
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
 * The series grid of many vaults, shared by every series (composition, performance): CTEs `v`
 * (the vaults of $1 with their first snapshot in `table`) and `b` (one row per vault and bucket
 * start `t`). Parameters: $1 vault ids (JSON), $2 the step (an interval), $3 the first bucket's
 * start (null: the bucket of the vault's first snapshot), $4 the newest bucket's start, $6 the
 * grid's origin (src/vaults/composition.ts gridWindow, BUCKET_ORIGIN).
 */
const seriesGrid = (table: 'composition_snapshots' | 'vault_snapshots') => `WITH v AS (
    SELECT v.id, (SELECT min(cs.as_of) FROM ${table} cs WHERE cs.vault_id = v.id) AS first_as_of
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
  )`

/** Parameters of seriesGrid, in order ($5 is the window's end, exclusive: no bucket looks at or past it). */
const gridParams = (vaultIds: readonly string[], w: SeriesWindow) => [
  JSON.stringify(vaultIds),
  `${w.stepMs} milliseconds`,
  w.firstStart?.toISOString() ?? null,
  w.lastStart.toISOString(),
  w.end.toISOString(),
  BUCKET_ORIGIN.toISOString(),
]

/**
 * One statement for the whole series of many vaults: generate_series lays out each vault's buckets
 * (`all` from the bucket of its first snapshot; fixed windows no earlier than it either, since
 * earlier buckets have no point), and for each bucket a lateral probe of the (vault_id, as_of desc)
 * index finds the last snapshot taken before the bucket closes. Buckets are half-open,
 * [t, t + step), so a snapshot on a boundary belongs to the bucket it opens, not to the one before;
 * no bucket looks at or past the window's end (a range's `to`, or just past now). Buckets before the first snapshot find none and drop out.
 * Weights are summed per group as exact numerics and rounded once. Intervals are given in
 * milliseconds, never days, so no time zone or daylight-saving rule can stretch a bucket.
 */
const seriesSql = (groupBy: GroupBy) => `${seriesGrid('composition_snapshots')}
  SELECT b.vault_id, b.t, a.${groupBy} AS label, round(sum(a.pct::numeric), ${PCT_DECIMALS})::float8 AS weight
  FROM b
  CROSS JOIN LATERAL (
    SELECT cs.id FROM composition_snapshots cs
    WHERE cs.vault_id = b.vault_id AND cs.as_of < b.t + $2::interval AND cs.as_of < $5::timestamptz
    ORDER BY cs.as_of DESC LIMIT 1
  ) s
  LEFT JOIN allocations a ON a.snapshot_id = s.id
  GROUP BY b.vault_id, b.t, a.${groupBy}
  ORDER BY b.vault_id, b.t`

/** The composition series of each vault (vaults without snapshots get no labels and no points). */
export async function loadCompositionSeries(
  db: Db,
  vaultIds: readonly string[],
  { window, groupBy }: { window: SeriesWindow; groupBy: GroupBy },
): Promise<Map<string, Series>> {
  if (!GROUP_BYS.includes(groupBy)) throw new Error(`unknown groupBy ${String(groupBy)}`) // it is spliced into the SQL
  const rows = await db.$queryRawUnsafe<SeriesRow[]>(seriesSql(groupBy), ...gridParams(vaultIds, window))
  const byVault = new Map<string, SeriesRow[]>()
  for (const r of rows) byVault.get(r.vault_id)?.push(r) ?? byVault.set(r.vault_id, [r])
  return new Map(vaultIds.map((id) => [id, assembleSeries(byVault.get(id) ?? [])]))
}

// ---------------------------------------------------------------------------------------------
// Performance (decisions §9; the rules: src/vaults/performance.ts)

/**
 * The newest snapshot of vault `idExpr` at or before `boundExpr` that is not a spike (its share
 * price within $spike percent of the snapshot just before it; the first snapshot never is one;
 * $spike = 0: none is). One backward walk of the (vault_id, as_of) key that stops at the first
 * unflagged snapshot, each candidate looking up its predecessor with one more probe: two probes
 * when the newest candidate is not a spike, as almost always. The same test as isSpike, in exact
 * numerics.
 */
const unflaggedAtOrBefore = (idExpr: string, boundExpr: string, spike: string) => `(
    SELECT c.as_of, c.share_price FROM vault_snapshots c
    LEFT JOIN LATERAL (
      SELECT p.share_price FROM vault_snapshots p WHERE p.vault_id = c.vault_id AND p.as_of < c.as_of ORDER BY p.as_of DESC LIMIT 1
    ) p ON true
    WHERE c.vault_id = ${idExpr} AND c.as_of <= ${boundExpr}
      AND (p.share_price IS NULL OR ${spike} = 0 OR abs(c.share_price - p.share_price) * 100 <= ${spike} * p.share_price)
    ORDER BY c.as_of DESC LIMIT 1
  )`

const windowValues = APY_WINDOWS.map((w) => `('${w}', ${WINDOW_MS[w]})`).join(', ')

/**
 * Everything the performance of many vaults needs, in one statement: per vault its newest snapshot
 * at or before now (`newest`: the live values), its newest unflagged one (`s1`), its first
 * (`first`, for inception) and per APY window the newest unflagged snapshot at or before
 * s1.as_of − W (the window's name). A fixed number of index probes per vault, whatever its history.
 * Amounts travel as text: exact.
 */
const PERFORMANCE_SQL = `WITH v AS (
    SELECT id FROM jsonb_array_elements_text($1::jsonb) AS v(id)
  ), s1 AS (
    SELECT v.id, u.as_of, u.share_price FROM v CROSS JOIN LATERAL ${unflaggedAtOrBefore('v.id', '$2::timestamptz', '$3::numeric')} u
  )
  SELECT 'newest' AS kind, v.id AS vault_id, n.as_of, n.share_price::text AS share_price, n.tvl::text AS tvl, n.base_asset_price_usd::text AS price_usd
  FROM v CROSS JOIN LATERAL (
    SELECT s.as_of, s.share_price, s.tvl, s.base_asset_price_usd FROM vault_snapshots s
    WHERE s.vault_id = v.id AND s.as_of <= $2::timestamptz ORDER BY s.as_of DESC LIMIT 1
  ) n
  UNION ALL
  SELECT 'first', v.id, f.as_of, f.share_price::text, NULL, NULL
  FROM v CROSS JOIN LATERAL (SELECT s.as_of, s.share_price FROM vault_snapshots s WHERE s.vault_id = v.id ORDER BY s.as_of LIMIT 1) f
  UNION ALL
  SELECT 's1', s1.id, s1.as_of, s1.share_price::text, NULL, NULL FROM s1
  UNION ALL
  SELECT w.name, s1.id, s0.as_of, s0.share_price::text, NULL, NULL
  FROM s1 CROSS JOIN (VALUES ${windowValues}) AS w(name, ms)
  CROSS JOIN LATERAL ${unflaggedAtOrBefore('s1.id', "s1.as_of - w.ms * interval '1 millisecond'", '$3::numeric')} s0`

interface PerformanceRow {
  kind: 'newest' | 'first' | 's1' | ApyWindow
  vault_id: string
  as_of: Date
  share_price: string
  tvl: string | null
  price_usd: string | null
}

/** A vault's performance (decisions §9); every field null while it has no snapshot up to now. */
export interface VaultPerformance {
  asOf: Date | null
  sharePrice: string | null
  tvl: string | null
  baseAssetPriceUsd: string | null
  tvlUsd: string | null
  apyPct: ApyPct
  /** The snapshots each APY came from (decisions §14), null where the APY is null. */
  apyBasis: ApyBasis
}

const NO_PERFORMANCE: VaultPerformance = { asOf: null, sharePrice: null, tvl: null, baseAssetPriceUsd: null, tvlUsd: null, apyPct: NO_APY, apyBasis: NO_BASIS }

/** The performance of each vault at `now` (a request's now, or an earlier `at`), in one statement. */
export async function loadPerformance(
  db: Db,
  vaultIds: readonly string[],
  { now, spikePct }: { now: Date; spikePct: number },
): Promise<Map<string, VaultPerformance>> {
  const rows = await db.$queryRawUnsafe<PerformanceRow[]>(PERFORMANCE_SQL, JSON.stringify(vaultIds), now.toISOString(), spikePct)
  const byVault = new Map<string, Partial<Record<PerformanceRow['kind'], PerformanceRow>>>()
  for (const r of rows) {
    const found = byVault.get(r.vault_id) ?? {}
    found[r.kind] = r
    byVault.set(r.vault_id, found)
  }
  const point = (r: PerformanceRow | undefined) => (r ? { asOf: r.as_of, sharePrice: formatAmount(r.share_price) } : null)
  const out = new Map<string, VaultPerformance>()
  for (const id of vaultIds) {
    const found = byVault.get(id)
    const newest = found?.newest
    if (!found || !newest) {
      out.set(id, NO_PERFORMANCE)
      continue
    }
    const s1 = point(found.s1)
    const apyPct = { ...NO_APY }
    const apyBasis = { ...NO_BASIS }
    if (s1) {
      for (const w of APY_WINDOWS) {
        const s0 = point(found[w])
        apyPct[w] = realizedApyPct(s0, s1)
        apyBasis[w] = basisOf(apyPct[w], s0, s1)
      }
      apyPct.inception = inceptionApyPct(point(found.first)!, s1)
      apyBasis.inception = basisOf(apyPct.inception, point(found.first), s1)
    }
    out.set(id, {
      asOf: newest.as_of,
      sharePrice: formatAmount(newest.share_price),
      tvl: formatAmount(newest.tvl!),
      baseAssetPriceUsd: newest.price_usd === null ? null : formatAmount(newest.price_usd),
      tvlUsd: tvlUsd(newest.tvl!, newest.price_usd),
      apyPct,
      apyBasis,
    })
  }
  return out
}

/**
 * One statement for the performance series of many vaults, on the composition series' grid and
 * bucket rule (seriesGrid): per bucket the newest snapshot taken before it closes, the snapshot
 * just before that one (for its spike flag) and the newest unflagged snapshot 7 days or more before
 * it (s0 of its 7-day APY). Four index probes per point, none of them a scan.
 */
const PERFORMANCE_SERIES_SQL = `${seriesGrid('vault_snapshots')}
  SELECT b.vault_id, b.t, s.as_of, s.share_price::text AS share_price, s.tvl::text AS tvl, s.base_asset_price_usd::text AS price_usd,
    prev.share_price::text AS prev_price, s0.as_of AS s0_as_of, s0.share_price::text AS s0_price
  FROM b
  CROSS JOIN LATERAL (
    SELECT s.as_of, s.share_price, s.tvl, s.base_asset_price_usd FROM vault_snapshots s
    WHERE s.vault_id = b.vault_id AND s.as_of < b.t + $2::interval AND s.as_of < $5::timestamptz
    ORDER BY s.as_of DESC LIMIT 1
  ) s
  LEFT JOIN LATERAL (
    SELECT p.share_price FROM vault_snapshots p WHERE p.vault_id = b.vault_id AND p.as_of < s.as_of ORDER BY p.as_of DESC LIMIT 1
  ) prev ON true
  LEFT JOIN LATERAL ${unflaggedAtOrBefore('b.vault_id', `s.as_of - interval '${WINDOW_MS['7d']} milliseconds'`, '$7::numeric')} s0 ON true
  ORDER BY b.vault_id, b.t`

interface PerformanceSeriesRow {
  vault_id: string
  t: Date
  as_of: Date
  share_price: string
  tvl: string
  price_usd: string | null
  prev_price: string | null
  s0_as_of: Date | null
  s0_price: string | null
}

export type PerformanceFlag = 'spike'

/** One point of a performance series: the bucket's snapshot, its USD TVL and 7-day APY. */
export interface PerformancePoint {
  /** The bucket's start. */
  t: Date
  sharePrice: string
  tvl: string
  tvlUsd: string | null
  /** Null on a spike and where the history does not reach 7 days back. */
  apy7dPct: number | null
  flags: PerformanceFlag[]
}

/** The performance series of each vault (no points for a vault without snapshots up to now). */
export async function loadPerformanceSeries(
  db: Db,
  vaultIds: readonly string[],
  { window, spikePct }: { window: SeriesWindow; spikePct: number },
): Promise<Map<string, PerformancePoint[]>> {
  const rows = await db.$queryRawUnsafe<PerformanceSeriesRow[]>(PERFORMANCE_SERIES_SQL, ...gridParams(vaultIds, window), spikePct)
  const out = new Map<string, PerformancePoint[]>(vaultIds.map((id) => [id, []]))
  for (const r of rows) {
    const s1 = { asOf: r.as_of, sharePrice: r.share_price }
    const spike = isSpike(r.prev_price, r.share_price, spikePct)
    out.get(r.vault_id)?.push({
      t: r.t,
      sharePrice: formatAmount(r.share_price),
      tvl: formatAmount(r.tvl),
      tvlUsd: tvlUsd(r.tvl, r.price_usd),
      apy7dPct: spike || r.s0_as_of === null ? null : realizedApyPct({ asOf: r.s0_as_of, sharePrice: r.s0_price! }, s1),
      flags: spike ? ['spike'] : [],
    })
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Per-request loaders

export interface LatestKey {
  vaultId: string
  now: Date
}

export interface SeriesKey {
  vaultId: string
  window: SeriesWindow
  groupBy: GroupBy
}

/** A window as text: requests whose windows are equal (a timeframe and a range alike) share a statement. */
const windowKey = (w: SeriesWindow) => `${w.stepMs} ${w.firstStart?.toISOString() ?? 'first'} ${w.lastStart.toISOString()} ${w.end.toISOString()}`

/** Keys of one batch that can share a statement, by `batchOf`. */
function partition<K>(keys: readonly K[], batchOf: (key: K) => string): Map<string, K[]> {
  const batches = new Map<string, K[]>()
  for (const k of keys) batches.get(batchOf(k))?.push(k) ?? batches.set(batchOf(k), [k])
  return batches
}

export interface PerformanceKey {
  vaultId: string
  now: Date
}

export interface PerformanceSeriesKey {
  vaultId: string
  window: SeriesWindow
}

/** A vault's record, or null: for fields outside plugin-prisma's selections (a subscription's event). */
export function findVault(db: Db, id: string): Promise<Vault | null> {
  return db.vault.findUnique({ where: { id } })
}

/**
 * The columns of a vault row under its model's field names (`Record<keyof Vault, …>`: a field
 * added to the model and missing here fails the type check), for reads Prisma cannot express.
 */
const VAULT_SELECT: Record<keyof Vault, string> = {
  id: 'id',
  name: 'name',
  chain: 'chain',
  chainId: 'chain_id',
  symbol: 'symbol',
  baseAsset: 'base_asset',
  baseAssetPriceUsd: 'base_asset_price_usd',
  status: 'status',
  tvl: 'tvl',
  sharePrice: 'share_price',
  perfFeeBps: 'perf_fee_bps',
  mgmtFeeBps: 'mgmt_fee_bps',
  contractAddress: 'contract_address',
  maxDeposit: 'max_deposit',
  minDeposit: 'min_deposit',
  depositPaused: 'deposit_paused',
  instantLiquidity: 'instant_liquidity',
  instantSlippageMaxBps: 'instant_slippage_max_bps',
  redeem24hThresholdPctOfAum: 'redeem_24h_threshold_pct_of_aum',
  redeem48hAboveThreshold: 'redeem_48h_above_threshold',
  iconDark: 'icon_dark',
  iconLight: 'icon_light',
  apiEndpoint: 'api_endpoint',
  description: 'description',
  docsUrl: 'docs_url',
  inceptionDate: 'inception_date',
  strategyBrief: 'strategy_brief',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  dataAsOf: 'data_as_of',
}

// One probe of vaults_chain_id_contract_address_key (prisma/migrations/*_vault_chain_address): an
// expression index, which Prisma's query API cannot use (its case-insensitive equals is ILIKE), so
// the row is read here with its columns named as the model's fields. `status` as text, as Prisma reads enums.
const VAULT_BY_ADDRESS_SQL = `SELECT ${Object.entries(VAULT_SELECT)
  .map(([field, column]) => `${column}${column === 'status' ? '::text' : ''} AS "${field}"`)
  .join(', ')}
  FROM vaults WHERE chain_id = $1 AND lower(contract_address) = $2`

/** The vault with this chain id (decimal text) and contract address (lowercase), or null (decisions §14). */
export async function findVaultByAddress(db: Db, chainId: string, address: string): Promise<Vault | null> {
  const rows = await db.$queryRawUnsafe<Vault[]>(VAULT_BY_ADDRESS_SQL, chainId, address)
  return rows[0] ?? null
}

/** Whether a vault of this id exists (one primary-key probe). */
export async function vaultExists(db: Db, id: string): Promise<boolean> {
  return (await db.vault.findUnique({ where: { id }, select: { id: true } })) !== null
}

/** `spikePct`: the SPIKE_PCT setting. */
export function vaultLoaders(db: Db, { spikePct }: { spikePct: number }) {
  return {
    /** A vault's latest snapshot at or before the request's now, or null. */
    latestSnapshot: new DataLoader<LatestKey, { asOf: Date; allocations: Allocation[] } | null, string>(
      async (keys) => {
        const found = new Map<string, { asOf: Date; allocations: Allocation[] }>()
        for (const [now, batch] of partition(keys, (k) => k.now.toISOString())) {
          const snapshots = await loadLatestSnapshots(db, [...new Set(batch.map((k) => k.vaultId))], new Date(now))
          for (const [id, s] of snapshots) found.set(`${now} ${id}`, s)
        }
        return keys.map((k) => found.get(`${k.now.toISOString()} ${k.vaultId}`) ?? null)
      },
      { cacheKeyFn: (k) => `${k.now.toISOString()} ${k.vaultId}` },
    ),
    /** A vault's composition series; vaults asking for the same window and grouping share one statement. */
    compositionSeries: new DataLoader<SeriesKey, Series, string>(
      async (keys) => {
        const found = new Map<string, Series>()
        const batchOf = (k: SeriesKey) => `${k.groupBy} ${windowKey(k.window)}`
        for (const [batch, members] of partition(keys, batchOf)) {
          const { window, groupBy } = members[0]!
          const series = await loadCompositionSeries(db, [...new Set(members.map((k) => k.vaultId))], { window, groupBy })
          for (const [id, s] of series) found.set(`${batch} ${id}`, s)
        }
        return keys.map((k) => found.get(`${batchOf(k)} ${k.vaultId}`)!)
      },
      { cacheKeyFn: (k) => `${k.groupBy} ${windowKey(k.window)} ${k.vaultId}` },
    ),
    /** A vault's performance at the request's now; a list of vaults shares one statement. */
    performance: new DataLoader<PerformanceKey, VaultPerformance, string>(
      async (keys) => {
        const found = new Map<string, VaultPerformance>()
        for (const [now, batch] of partition(keys, (k) => k.now.toISOString())) {
          const perf = await loadPerformance(db, [...new Set(batch.map((k) => k.vaultId))], { now: new Date(now), spikePct })
          for (const [id, p] of perf) found.set(`${now} ${id}`, p)
        }
        return keys.map((k) => found.get(`${k.now.toISOString()} ${k.vaultId}`)!)
      },
      { cacheKeyFn: (k) => `${k.now.toISOString()} ${k.vaultId}` },
    ),
    /** A vault's performance series; vaults asking for the same window share one statement. */
    performanceSeries: new DataLoader<PerformanceSeriesKey, PerformancePoint[], string>(
      async (keys) => {
        const found = new Map<string, PerformancePoint[]>()
        const batchOf = (k: PerformanceSeriesKey) => windowKey(k.window)
        for (const [batch, members] of partition(keys, batchOf)) {
          const { window } = members[0]!
          const series = await loadPerformanceSeries(db, [...new Set(members.map((k) => k.vaultId))], { window, spikePct })
          for (const [id, s] of series) found.set(`${batch} ${id}`, s)
        }
        return keys.map((k) => found.get(`${batchOf(k)} ${k.vaultId}`)!)
      },
      { cacheKeyFn: (k) => `${windowKey(k.window)} ${k.vaultId}` },
    ),
  }
}

// ---------------------------------------------------------------------------------------------
// The vault list

/** A page of the vault list: its rows in order, whether more lie beyond, and each row's place (for cursors). */
export interface VaultPage {
  rows: Vault[]
  more: boolean
  positions: Map<string, VaultPosition>
  /** Under an APY order: the performance of every vault it read (the resolver primes its loader with them). */
  performance?: Map<string, VaultPerformance>
}

// Vaults matching the filters and the search (a case-insensitive substring of id, name or symbol:
// strpos, so `%` and `_` are plain characters). $1 chain, $2 status, $3 search (null = none).
const MATCHING = `FROM vaults v
  WHERE ($1::text IS NULL OR v.chain = $1::text) AND ($2::text IS NULL OR v.status::text = $2::text)
    AND ($3::text IS NULL OR strpos(lower(v.id), lower($3::text)) > 0 OR strpos(lower(v.name), lower($3::text)) > 0 OR strpos(lower(v.symbol), lower($3::text)) > 0)`

/** Ids of a searched page in id order, keyset as without a search ($4 the id to continue from, $5 the row limit). */
const searchPageSql = (forward: boolean) =>
  `SELECT v.id ${MATCHING} AND ($4::text IS NULL OR v.id ${forward ? '>' : '<'} $4::text) ORDER BY v.id ${forward ? 'ASC' : 'DESC'} LIMIT $5`

/** Every matching vault with what value orders sort by. */
const CANDIDATES_SQL = `SELECT v.id, v.tvl::text AS tvl, v.base_asset_price_usd::text AS price_usd ${MATCHING}`

/** The rows of `ids`, in that order (one statement). */
async function vaultsInOrder(db: Db, ids: string[]): Promise<Vault[]> {
  if (ids.length === 0) return []
  const rows = await db.vault.findMany({ where: { id: { in: ids } } })
  const byId = new Map(rows.map((r) => [r.id, r]))
  return ids.flatMap((id) => byId.get(id) ?? [])
}

/**
 * One page of the vault list. By id (no order): keyset on the primary key, one statement (two with
 * a search). By a value: every matching vault's value is read (one statement, plus one for the
 * performance of all of them under an APY order), sorted here (src/vaults/list.ts compareByOrder),
 * and the page's rows read by id: a fixed number of statements whatever the page size.
 */
export async function findVaultPage(
  db: Db,
  filter: VaultListFilter,
  page: VaultPageRequest,
  { now, spikePct }: { now: Date; spikePct: number } = { now: new Date(), spikePct: DEFAULT_SPIKE_PCT },
): Promise<VaultPage> {
  const forward = page.direction === 'forward'
  const search = filter.search ?? null
  const { order } = page
  if (!order) {
    let rows: Vault[]
    if (search === null) {
      rows = await db.vault.findMany({
        where: {
          chain: filter.chain ?? undefined,
          status: filter.status ?? undefined,
          ...(page.from === null ? {} : { id: forward ? { gt: page.from.id } : { lt: page.from.id } }),
        },
        orderBy: { id: forward ? 'asc' : 'desc' },
        take: page.size + 1,
      })
    } else {
      const ids = await db.$queryRawUnsafe<{ id: string }[]>(searchPageSql(forward), filter.chain, filter.status, search, page.from?.id ?? null, page.size + 1)
      rows = await vaultsInOrder(
        db,
        ids.map((r) => r.id),
      )
    }
    const more = rows.length > page.size
    const kept = rows.slice(0, page.size)
    const ordered = forward ? kept : kept.reverse()
    return { rows: ordered, more, positions: new Map(ordered.map((r) => [r.id, { id: r.id }])) }
  }

  const candidates = await db.$queryRawUnsafe<{ id: string; tvl: string; price_usd: string | null }[]>(CANDIDATES_SQL, filter.chain, filter.status, search)
  const apyWindow = order.field === 'apy7d' ? '7d' : order.field === 'apy30d' ? '30d' : null
  const performance = apyWindow
    ? await loadPerformance(
        db,
        candidates.map((c) => c.id),
        { now, spikePct },
      )
    : undefined
  const sortValue = (c: (typeof candidates)[number]): OrderValue => {
    if (apyWindow) return performance!.get(c.id)!.apyPct[apyWindow]
    return order.field === 'tvl' ? formatAmount(c.tvl) : tvlUsd(c.tvl, c.price_usd)
  }
  const sorted = candidates.map((c) => ({ id: c.id, value: sortValue(c) })).sort((a, b) => compareByOrder(order, a, b))
  const from = page.from === null ? null : { id: page.from.id, value: page.from.value ?? null }
  let slice: typeof sorted
  let more: boolean
  if (forward) {
    const start = from === null ? 0 : firstIndex(sorted, (p) => compareByOrder(order, p, from) > 0)
    slice = sorted.slice(start, start + page.size)
    more = start + page.size < sorted.length
  } else {
    const end = from === null ? sorted.length : firstIndex(sorted, (p) => compareByOrder(order, p, from) >= 0)
    slice = sorted.slice(Math.max(0, end - page.size), end)
    more = end - page.size > 0
  }
  const rows = await vaultsInOrder(
    db,
    slice.map((p) => p.id),
  )
  return { rows, more, positions: new Map(slice.map((p) => [p.id, p])), performance }
}

/** The first index of a sorted list where `past` holds (it holds from there on), or the length. */
function firstIndex<T>(sorted: readonly T[], past: (item: T) => boolean): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (past(sorted[mid]!)) hi = mid
    else lo = mid + 1
  }
  return lo
}
