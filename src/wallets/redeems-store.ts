import { prisma } from '../db/client.js'
import { averageRedeemDelaySeconds, redeemDelayWindow, sumAmounts } from './redeems.js'
import { Prisma } from '../generated/prisma/client.js'

export interface PendingRedeemRow {
  vaultId: string
  amount: string
  submittedAt: Date
  transactionType: 'redeem'
  txHash: string
}

export interface PendingRedeems {
  address: string
  asOf: Date
  pendingRedeems: PendingRedeemRow[]
  totalPending: string
  averageRedeemDelay: number
}

/**
 * decisions.md §6. The list reads transactions_pending_redeems_idx (oldest first: the order they
 * will be served in); the delay reads transactions_completed_redeems_idx, and is only asked for
 * when there is a pending redeem (without one there are no vaults to average over: 0).
 */
export async function pendingRedeemsOf(address: string, now: Date): Promise<PendingRedeems> {
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
    asOf: now,
    pendingRedeems: rows.map((r) => ({ vaultId: r.vault_id, amount: r.amount, submittedAt: r.timestamp, transactionType: 'redeem', txHash: r.tx_hash })),
    totalPending: sumAmounts(rows.map((r) => r.amount)),
    averageRedeemDelay,
  }
}
