import DataLoader from 'dataloader'
import type { Db } from '../db/client.js'
import { Prisma, type TransactionStatus, type TransactionType } from '../generated/prisma/client.js'
import type { HistoryFilter, HistoryPosition } from './history-cursor.js'
import { summarizePosition, type PositionSummary } from './position.js'
import { averageRedeemDelaySeconds, redeemDelayWindow, redeemEta, sumAmounts } from './redeems.js'
import { formatAmount } from '../core/decimal.js'

// Every SQL statement about wallets: a wallet's transaction history (keyset pages), its positions
// (sums in SQL, products in src/wallets/position.ts) and its pending redeems.

// ---------------------------------------------------------------------------------------------
// Transaction history

/** A transaction as the history lists it (the spec's Transaction fields). */
export interface TransactionRow {
  id: string
  vaultId: string
  type: TransactionType
  status: TransactionStatus
  amount: Prisma.Decimal
  timestamp: Date
  txHash: string
}

interface RawRow {
  id: string
  vault_id: string
  type: TransactionType
  status: TransactionStatus
  amount: Prisma.Decimal
  timestamp: Date
  tx_hash: string
}

/**
 * One page of a wallet's history in a vault, newest first: a keyset query on (timestamp, id) that
 * walks transactions_history_idx (or transactions_history_type_idx with a type) from the cursor's
 * position, so a page costs the same at any depth. Across vaults (`vaultId` null) the same walk
 * runs on transactions_wallet_history_idx (or transactions_wallet_history_type_idx), whose keys
 * are the same without the vault: the rows of every vault come out already merged in order. The row comparison is what lets PostgreSQL use
 * both columns as the index's start key; the equivalent `ts < x OR (ts = x AND id < y)` that an ORM
 * generates is only a filter, and deep pages would scan every row before the cursor.
 * `take` is the page size + 1: the extra row tells whether there is a next page.
 */
export function historyPageSql(filter: HistoryFilter, after: HistoryPosition | null, take: number): Prisma.Sql {
  return Prisma.sql`SELECT id, vault_id, type::text AS type, status::text AS status, amount, "timestamp", tx_hash
    FROM transactions
    WHERE address = ${filter.address}${filter.vaultId === null ? Prisma.empty : Prisma.sql` AND vault_id = ${filter.vaultId}`}${
      filter.type === null ? Prisma.empty : Prisma.sql` AND type = ${filter.type}::"TransactionType"`
    }${after === null ? Prisma.empty : Prisma.sql` AND ("timestamp", id) < (${after.timestamp.toISOString()}::timestamptz, ${after.id})`}
    ORDER BY "timestamp" DESC, id DESC
    LIMIT ${take}::int`
}

export async function fetchHistoryPage(
  db: Db,
  filter: HistoryFilter,
  after: HistoryPosition | null,
  limit: number,
): Promise<{ rows: TransactionRow[]; hasNextPage: boolean }> {
  const raw = await db.$queryRaw<RawRow[]>(historyPageSql(filter, after, limit + 1))
  const rows = raw.slice(0, limit).map((r) => ({
    id: r.id,
    vaultId: r.vault_id,
    type: r.type,
    status: r.status,
    amount: r.amount,
    timestamp: r.timestamp,
    txHash: r.tx_hash,
  }))
  return { rows, hasNextPage: raw.length > limit }
}

// ---------------------------------------------------------------------------------------------
// Positions

// Every sum is taken in SQL over NUMERIC (exact, no rounding) in one pass over the wallet's rows
// of transactions_history_idx; only the products are computed in decimal.js (domain/position.ts).
const TOTALS = Prisma.sql`
  coalesce(sum(t.shares) FILTER (WHERE t.type = 'deposit' AND t.status = 'completed'), 0)::text AS deposited_shares,
  coalesce(sum(t.shares) FILTER (WHERE t.type IN ('withdraw', 'redeem') AND t.status IN ('completed', 'pending', 'claimable')), 0)::text AS outflow_shares,
  coalesce(sum(t.amount) FILTER (WHERE t.type = 'deposit' AND t.status = 'completed'), 0)::text AS deposit_amount,
  coalesce(sum(t.amount) FILTER (WHERE t.type IN ('withdraw', 'redeem') AND t.status IN ('completed', 'pending', 'claimable')), 0)::text AS outflow_amount,
  min(t."timestamp") FILTER (WHERE t.type = 'deposit' AND t.status = 'completed') AS first_deposit_at`

interface TotalsRow {
  address: string
  vault_id: string
  share_price: string
  base_asset_price_usd: string | null
  deposited_shares: string
  outflow_shares: string
  deposit_amount: string
  outflow_amount: string
  first_deposit_at: Date | null
}

function toSummary(row: TotalsRow): PositionSummary | null {
  return summarizePosition(
    row.vault_id,
    {
      depositedShares: row.deposited_shares,
      outflowShares: row.outflow_shares,
      depositAmount: row.deposit_amount,
      outflowAmount: row.outflow_amount,
      firstDepositAt: row.first_deposit_at,
    },
    { sharePrice: row.share_price, baseAssetPriceUsd: row.base_asset_price_usd },
  )
}

/** Every vault where `address` has a completed deposit, in one statement whatever the number of vaults. */
export async function positionsOf(db: Db, address: string): Promise<PositionSummary[]> {
  const rows = await db.$queryRaw<TotalsRow[]>`
    SELECT t.address, t.vault_id, v.share_price::text AS share_price, v.base_asset_price_usd::text AS base_asset_price_usd, ${TOTALS}
    FROM transactions t JOIN vaults v ON v.id = t.vault_id
    WHERE t.address = ${address}
    GROUP BY t.address, t.vault_id, v.share_price, v.base_asset_price_usd
    HAVING bool_or(t.type = 'deposit' AND t.status = 'completed')
    ORDER BY t.vault_id`
  return rows.map((r) => toSummary(r)).filter((s): s is PositionSummary => s !== null)
}

export interface PositionKey {
  /** Lowercase. */
  address: string
  vaultId: string
}

/** `undefined`: no such vault. `null`: the vault exists but the wallet never completed a deposit. */
export type PositionResult = PositionSummary | null | undefined

/**
 * Per-request loader for `position(vaultId)`: every position asked for in one operation (aliases,
 * several wallets) is read by one statement. Vaults drive the join, so an unknown vault is told
 * apart from a vault without deposits without a second query.
 */
export function createPositionLoader(db: Db) {
  return new DataLoader<PositionKey, PositionResult, string>(
    async (keys) => {
      const pairs = Prisma.join(keys.map((k) => Prisma.sql`(${k.address}, ${k.vaultId})`))
      const rows = await db.$queryRaw<TotalsRow[]>`
        SELECT k.address, v.id AS vault_id, v.share_price::text AS share_price, v.base_asset_price_usd::text AS base_asset_price_usd, ${TOTALS}
        FROM (VALUES ${pairs}) AS k(address, vault_id)
        JOIN vaults v ON v.id = k.vault_id
        LEFT JOIN transactions t ON t.address = k.address AND t.vault_id = k.vault_id
        GROUP BY k.address, v.id, v.share_price, v.base_asset_price_usd`
      const found = new Map(rows.map((r) => [`${r.address}\u0000${r.vault_id}`, r]))
      return keys.map((k) => {
        const row = found.get(`${k.address}\u0000${k.vaultId}`)
        return row === undefined ? undefined : toSummary(row)
      })
    },
    { cacheKeyFn: (k) => `${k.address}\u0000${k.vaultId}`, maxBatchSize: 500 },
  )
}

// ---------------------------------------------------------------------------------------------
// Pending redeems

export interface PendingRedeemRow {
  vaultId: string
  amount: string
  submittedAt: Date
  transactionType: 'redeem'
  txHash: string
  status: 'pending' | 'claimable'
  /** 1-based place among the vault's pending redeems by (timestamp, id); null when claimable. */
  queuePosition: number | null
  /** Sum of the pending amounts ahead of it in its vault; null when claimable. */
  amountAhead: string | null
  /** Submitted time + the vault's delay percentiles; null when claimable or without history. */
  eta: { p50: Date; p90: Date } | null
}

export interface PendingRedeems {
  address: string
  /** The time of the newest data used (its vaults' data time, src/freshness/answer.ts; set by the GraphQL field). */
  asOf: Date
  pendingRedeems: PendingRedeemRow[]
  totalPending: string
  totalClaimable: string
  averageRedeemDelay: number
}

interface QueuedRow {
  vault_id: string
  amount: string
  timestamp: Date
  tx_hash: string
  status: 'pending' | 'claimable'
  ahead: number
  amount_ahead: string
}

interface DelayRow {
  /** Null on the grand-total row (GROUPING SETS' `()`), which carries the average's count and sum. */
  vault_id: string | null
  n: string
  total_ms: string
  p50: string | null
  p90: string | null
}

/**
 * docs/spec/decisions.md §6 and §14. Two statements whatever the number of vaults:
 * - the wallet's pending and claimable redeems (transactions_pending_redeems_idx, oldest first: the
 *   order they will be served in), each pending one with its place in its vault's queue and the
 *   amount ahead of it (a lateral index-only scan of transactions_redeem_queue_idx up to it);
 * - only when some are pending, the delays of the redeems completed in the last 90 days in those
 *   vaults (transactions_completed_redeems_idx): per vault the nearest-rank 50th and 90th
 *   percentiles (percentile_disc) on whole seconds, and over all of them together the count and
 *   sum of the average delay, by GROUPING SETS in the same scan.
 */
export async function pendingRedeemsOf(db: Db, address: string, now: Date, asOf: Date = now): Promise<PendingRedeems> {
  const rows = await db.$queryRaw<QueuedRow[]>`
    SELECT t.vault_id, t.amount::text AS amount, t."timestamp", t.tx_hash, t.status::text AS status,
      q.ahead, q.amount_ahead
    FROM transactions t
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS ahead, coalesce(sum(o.amount), 0)::text AS amount_ahead
      FROM transactions o
      WHERE t.status = 'pending' AND o.vault_id = t.vault_id AND o.type = 'redeem' AND o.status = 'pending'
        AND (o."timestamp", o.id) < (t."timestamp", t.id)
    ) q
    WHERE t.address = ${address} AND t.type = 'redeem' AND (t.status = 'pending' OR t.status = 'claimable')
    ORDER BY t."timestamp", t.id`
  const pending = rows.filter((r) => r.status === 'pending')
  let averageRedeemDelay = 0
  const percentiles = new Map<string, { p50: number; p90: number }>()
  if (pending.length > 0) {
    const vaults = [...new Set(pending.map((r) => r.vault_id))]
    const { from, to } = redeemDelayWindow(now)
    const delays = await db.$queryRaw<DelayRow[]>`
      SELECT vault_id, count(*)::text AS n,
        coalesce(sum(extract(epoch FROM completed_at - "timestamp") * 1000), 0)::numeric(40, 0)::text AS total_ms,
        percentile_disc(0.5) WITHIN GROUP (ORDER BY floor(extract(epoch FROM completed_at - "timestamp")))::text AS p50,
        percentile_disc(0.9) WITHIN GROUP (ORDER BY floor(extract(epoch FROM completed_at - "timestamp")))::text AS p90
      FROM transactions
      WHERE type = 'redeem' AND status = 'completed' AND vault_id IN (${Prisma.join(vaults)})
        AND completed_at >= ${from.toISOString()}::timestamptz AND completed_at <= ${to.toISOString()}::timestamptz
      GROUP BY GROUPING SETS ((vault_id), ())`
    for (const d of delays) {
      if (d.vault_id === null) averageRedeemDelay = averageRedeemDelaySeconds(BigInt(d.total_ms), BigInt(d.n))
      else if (d.p50 !== null && d.p90 !== null) percentiles.set(d.vault_id, { p50: Number(d.p50), p90: Number(d.p90) })
    }
  }
  return {
    address,
    asOf,
    pendingRedeems: rows.map((r) => {
      const claimable = r.status === 'claimable'
      const delay = percentiles.get(r.vault_id)
      return {
        vaultId: r.vault_id,
        amount: r.amount,
        submittedAt: r.timestamp,
        transactionType: 'redeem',
        txHash: r.tx_hash,
        status: r.status,
        queuePosition: claimable ? null : r.ahead + 1,
        amountAhead: claimable ? null : formatAmount(r.amount_ahead),
        eta: claimable || delay === undefined ? null : redeemEta(r.timestamp, delay),
      }
    }),
    totalPending: sumAmounts(pending.map((r) => r.amount)),
    totalClaimable: sumAmounts(rows.filter((r) => r.status === 'claimable').map((r) => r.amount)),
    averageRedeemDelay,
  }
}

// ---------------------------------------------------------------------------------------------
// Live updates

/** The wallet's transactions among `ids` (those a commit named, src/live/streams.ts), oldest first. */
export async function transactionsByIds(db: Db, address: string, ids: readonly string[]): Promise<TransactionRow[]> {
  if (ids.length === 0) return []
  const raw = await db.$queryRaw<RawRow[]>`SELECT id, vault_id, type::text AS type, status::text AS status, amount, "timestamp", tx_hash
    FROM transactions WHERE address = ${address} AND id = ANY(${[...ids]}::text[])
    ORDER BY "timestamp", id`
  return raw.map((r) => ({ id: r.id, vaultId: r.vault_id, type: r.type, status: r.status, amount: r.amount, timestamp: r.timestamp, txHash: r.tx_hash }))
}
