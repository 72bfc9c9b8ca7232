import { z } from 'zod'
import { formatAmount, type DecimalLike } from '../core/decimal.js'
import { TransactionStatus, TransactionType, VaultStatus } from '../generated/prisma/enums.js'
import { AmountString as Amount, TimestampString as Timestamp } from '../core/formats.js'

// The webhook event catalogue (decisions.md §11) and the wire shape of each event's `data`.
// Field names and value formats are the REST shapes' (decisions.md §3): snake_case, amounts as
// exact decimal strings, RFC 3339 UTC timestamps with milliseconds, lowercase addresses.
// Every event is validated against its schema before it enters the outbox, so a receiver never
// sees a shape other than the documented one (src/webhooks/README.md).

export const WEBHOOK_EVENT_TYPES = [
  'vault.updated',
  'transaction.created',
  'transaction.status_changed',
  'redeem.claimable',
  'redeem.completed',
  'transaction.removed',
] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

const Address = z
  .string()
  .regex(/^0x[0-9a-f]{40}$/)
  .meta({ description: 'Wallet address, lowercase.' })

/** The spec's Transaction plus the owner `address`, `shares` and `completed_at` (the import document's shape). */
export const TransactionData = z.object({
  id: z.string().min(1),
  vault_id: z.string().min(1),
  address: Address,
  type: z.enum(TransactionType),
  status: z.enum(TransactionStatus),
  amount: Amount,
  shares: Amount,
  timestamp: Timestamp,
  completed_at: Timestamp.nullable(),
  tx_hash: z.string(),
})
export type TransactionData = z.infer<typeof TransactionData>

export const VaultUpdatedData = z.object({
  vault_id: z.string().min(1),
  status: z.enum(VaultStatus),
  tvl: Amount,
  share_price: Amount,
  /**
   * What changed: `values` (the vault record: live values, status, constraints, metadata, and
   * with them its performance history) and/or `composition` (a new composition snapshot).
   */
  changes: z.array(z.enum(['values', 'composition'])).min(1),
})
export type VaultUpdatedData = z.infer<typeof VaultUpdatedData>

export const TransactionStatusChangedData = TransactionData.extend({
  previous_status: z.enum(TransactionStatus),
}).refine((d) => d.status !== d.previous_status, { message: 'status must differ from previous_status' })
export type TransactionStatusChangedData = z.infer<typeof TransactionStatusChangedData>

export const RedeemClaimableData = TransactionData.refine((d) => d.type === 'redeem' && d.status === 'claimable', {
  message: 'a redeem.claimable event carries a claimable redeem',
})
export type RedeemClaimableData = z.infer<typeof RedeemClaimableData>

export const RedeemCompletedData = TransactionData.refine((d) => d.type === 'redeem' && d.status === 'completed', {
  message: 'a redeem.completed event carries a completed redeem',
})
export type RedeemCompletedData = z.infer<typeof RedeemCompletedData>

/** A transaction a chain reorg took back (src/sources/store.ts rollBack): the transaction as it was recorded. */
export const TransactionRemovedData = TransactionData
export type TransactionRemovedData = z.infer<typeof TransactionRemovedData>

export const eventDataSchemas = {
  'vault.updated': VaultUpdatedData,
  'transaction.created': TransactionData,
  'transaction.status_changed': TransactionStatusChangedData,
  'redeem.claimable': RedeemClaimableData,
  'redeem.completed': RedeemCompletedData,
  'transaction.removed': TransactionRemovedData,
} as const satisfies Record<WebhookEventType, z.ZodType>

/** One event as an emitter hands it to emitEvents(). */
export type WebhookEventInput =
  | { type: 'vault.updated'; data: VaultUpdatedData }
  | { type: 'transaction.created'; data: TransactionData }
  | { type: 'transaction.status_changed'; data: TransactionStatusChangedData }
  | { type: 'redeem.claimable'; data: RedeemClaimableData }
  | { type: 'redeem.completed'; data: RedeemCompletedData }
  | { type: 'transaction.removed'; data: TransactionRemovedData }

/**
 * The body a receiver gets (Standard Webhooks' recommended payload structure). The event id is
 * the `webhook-id` header, the same for every attempt and every replay of the event.
 */
export interface WebhookBody {
  type: WebhookEventType
  /** When the event was written (its data change committed with it), RFC 3339 UTC with ms. */
  timestamp: string
  data: Record<string, unknown>
}

export const isWebhookEventType = (t: unknown): t is WebhookEventType => typeof t === 'string' && (WEBHOOK_EVENT_TYPES as readonly string[]).includes(t)

/** A transaction as stored (Prisma row or the import's canonical row) → the event's `data`. */
export function transactionData(row: {
  id: string
  vaultId: string
  address: string
  type: TransactionData['type']
  status: TransactionData['status']
  amount: DecimalLike
  shares: DecimalLike
  timestamp: Date | string
  completedAt: Date | string | null
  txHash: string
}): TransactionData {
  return {
    id: row.id,
    vault_id: row.vaultId,
    address: row.address.toLowerCase(),
    type: row.type,
    status: row.status,
    amount: formatAmount(row.amount),
    shares: formatAmount(row.shares),
    timestamp: new Date(row.timestamp).toISOString(),
    completed_at: row.completedAt === null ? null : new Date(row.completedAt).toISOString(),
    tx_hash: row.txHash,
  }
}
