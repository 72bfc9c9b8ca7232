import { prisma } from '../db/client.js'
import type { HistoryFilter, HistoryPosition } from './history-cursor.js'
import { Prisma } from '../generated/prisma/client.js'
import type { TransactionStatus, TransactionType } from '../importer/document.js'

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

export async function fetchHistoryPage(filter: HistoryFilter, after: HistoryPosition | null, limit: number): Promise<{ rows: TransactionRow[]; hasNextPage: boolean }> {
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

export async function vaultExists(vaultId: string): Promise<boolean> {
  return (await prisma.vault.findUnique({ where: { id: vaultId }, select: { id: true } })) !== null
}
