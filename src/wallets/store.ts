import DataLoader from 'dataloader'
import { prisma } from '../db/client.js'
import { summarizePosition, type PositionSummary } from './position.js'
import { Prisma } from '../generated/prisma/client.js'

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
  base_asset_price_usd: string
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
