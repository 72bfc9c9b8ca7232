import DataLoader from 'dataloader'
import { prisma } from '../db/client.js'
import { Prisma, type TransactionStatus, type TransactionType } from '../generated/prisma/client.js'
import type { HistoryFilter, HistoryPosition } from './history-cursor.js'
import { summarizePosition, type PositionSummary } from './position.js'
import { averageRedeemDelaySeconds, redeemDelayWindow, sumAmounts } from './redeems.js'

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
 * position, so a page costs the same at any depth. The row comparison is what lets PostgreSQL use
 * both columns as the index's start key; the equivalent `ts < x OR (ts = x AND id < y)` that an ORM
 * generates is only a filter, and deep pages would scan every row before the cursor.
 * `take` is the page size + 1: the extra row tells whether there is a next page.
 */
export function historyPageSql(filter: HistoryFilter, after: HistoryPosition | null, take: number): Prisma.Sql {
  return Prisma.sql`SELECT id, vault_id, type::text AS type, status::text AS status, amount, "timestamp", tx_hash
    FROM transactions
    WHERE address = ${filter.address} AND vault_id = ${filter.vaultId}${
      filter.type === null ? Prisma.empty : Prisma.sql` AND type = ${filter.type}::"TransactionType"`
    }${after === null ? Prisma.empty : Prisma.sql` AND ("timestamp", id) < (${after.timestamp.toISOString()}::timestamptz, ${after.id})`}
    ORDER BY "timestamp" DESC, id DESC
    LIMIT ${take}::int`
}

export async function fetchHistoryPage(
  filter: HistoryFilter,
  after: HistoryPosition | null,
  limit: number,
): Promise<{ rows: TransactionRow[]; hasNextPage: boolean }> {
  const raw = await prisma.$queryRaw<RawRow[]>(historyPageSql(filter, after, limit + 1))
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
  coalesce(sum(t.shares) FILTER (WHERE t.type IN ('withdraw', 'redeem') AND t.status IN ('completed', 'pending')), 0)::text AS outflow_shares,
  coalesce(sum(t.amount) FILTER (WHERE t.type = 'deposit' AND t.status = 'completed'), 0)::text AS deposit_amount,
  coalesce(sum(t.amount) FILTER (WHERE t.type IN ('withdraw', 'redeem') AND t.status IN ('completed', 'pending')), 0)::text AS outflow_amount,
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
export async function positionsOf(address: string): Promise<PositionSummary[]> {
  const rows = await prisma.$queryRaw<TotalsRow[]>`
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
export function createPositionLoader() {
  return new DataLoader<PositionKey, PositionResult, string>(
    async (keys) => {
      const pairs = Prisma.join(keys.map((k) => Prisma.sql`(${k.address}, ${k.vaultId})`))
      const rows = await prisma.$queryRaw<TotalsRow[]>`
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
}

export interface PendingRedeems {
  address: string
  /** The time of the newest data used (its vaults' data time, src/freshness/answer.ts; set by the GraphQL field). */
  asOf: Date
  pendingRedeems: PendingRedeemRow[]
  totalPending: string
  averageRedeemDelay: number
}

/**
 * docs/spec/decisions.md §6. The list reads transactions_pending_redeems_idx (oldest first: the order they
 * will be served in); the delay reads transactions_completed_redeems_idx, and is only asked for
 * when there is a pending redeem (without one there are no vaults to average over: 0).
 */
export async function pendingRedeemsOf(address: string, now: Date, asOf: Date = now): Promise<PendingRedeems> {
  const rows = await prisma.$queryRaw<{ vault_id: string; amount: string; timestamp: Date; tx_hash: string }[]>`
    SELECT vault_id, amount::text AS amount, "timestamp", tx_hash FROM transactions
    WHERE address = ${address} AND type = 'redeem' AND status = 'pending'
    ORDER BY "timestamp", id`
  let averageRedeemDelay = 0
  if (rows.length > 0) {
    const vaults = [...new Set(rows.map((r) => r.vault_id))]
    const { from, to } = redeemDelayWindow(now)
    const [delay] = await prisma.$queryRaw<{ n: string; total_ms: string }[]>`
      SELECT count(*)::text AS n, coalesce(sum(extract(epoch FROM completed_at - "timestamp") * 1000), 0)::numeric(40, 0)::text AS total_ms
      FROM transactions
      WHERE type = 'redeem' AND status = 'completed' AND vault_id IN (${Prisma.join(vaults)})
        AND completed_at >= ${from.toISOString()}::timestamptz AND completed_at <= ${to.toISOString()}::timestamptz`
    averageRedeemDelay = averageRedeemDelaySeconds(BigInt(delay!.total_ms), BigInt(delay!.n))
  }
  return {
    address,
    asOf,
    pendingRedeems: rows.map((r) => ({ vaultId: r.vault_id, amount: r.amount, submittedAt: r.timestamp, transactionType: 'redeem', txHash: r.tx_hash })),
    totalPending: sumAmounts(rows.map((r) => r.amount)),
    averageRedeemDelay,
  }
}

// ---------------------------------------------------------------------------------------------
// Live updates

/** The wallet's transactions among `ids` (those a commit named, src/live/streams.ts), oldest first. */
export async function transactionsByIds(address: string, ids: readonly string[]): Promise<TransactionRow[]> {
  if (ids.length === 0) return []
  const raw = await prisma.$queryRaw<RawRow[]>`SELECT id, vault_id, type::text AS type, status::text AS status, amount, "timestamp", tx_hash
    FROM transactions WHERE address = ${address} AND id = ANY(${[...ids]}::text[])
    ORDER BY "timestamp", id`
  return raw.map((r) => ({ id: r.id, vaultId: r.vault_id, type: r.type, status: r.status, amount: r.amount, timestamp: r.timestamp, txHash: r.tx_hash }))
}
