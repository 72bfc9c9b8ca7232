import { randomUUID } from 'node:crypto'
import type { Clock } from '../core/clock.js'
import { prisma } from '../db/client.js'
import { AppError } from '../core/errors.js'
import type { KeyRevokeReason, Prisma } from '../generated/prisma/client.js'
import { notifyKeysChanged, walletKeysChanged } from './changes.js'
import { digestOf, generateRawKey, KEY_LIFETIME_MS } from './format.js'
import { inWalletTransaction } from './wallet-lock.js'

/** The API key record of spec §2 as stored (times as Dates; the GraphQL type turns them into ms). */
export interface ApiKeyRecord {
  id: string
  keyPrefix: string
  createdAt: Date
  expiresAt: Date
  revokedAt: Date | null
}

const recordFields = { id: true, keyPrefix: true, createdAt: true, expiresAt: true, revokedAt: true } as const

/** Who caused a change, for the audit trail: the wallet itself, `admin` or `system`. */
export type Actor = string

export const notWhitelisted = () => new AppError('not_whitelisted', 'This wallet is not on the allowlist.')

/**
 * Revokes the wallet's unrevoked key, if any, inside the caller's locked transaction, with an audit
 * event. A key that has already expired is recorded with reason `expired`, whatever the trigger.
 */
export async function revokeCurrentKey(
  tx: Prisma.TransactionClient,
  wallet: string,
  now: Date,
  reason: KeyRevokeReason,
  actor: Actor,
): Promise<{ id: string; reason: KeyRevokeReason } | undefined> {
  const current = await tx.apiKey.findFirst({ where: { wallet, revokedAt: null }, select: { id: true, expiresAt: true } })
  if (!current) return undefined
  const effective: KeyRevokeReason = current.expiresAt.getTime() <= now.getTime() ? 'expired' : reason
  await tx.apiKey.update({ where: { id: current.id }, data: { revokedAt: now, revokeReason: effective } })
  await tx.keyEvent.create({ data: { at: now, wallet, keyId: current.id, action: 'revoked', reason: effective, actor } })
  await notifyKeysChanged(tx, wallet)
  return { id: current.id, reason: effective }
}

/**
 * Issues a new key for an allowlisted wallet; the previous key is revoked (`replaced`, or `expired`)
 * in the same transaction. The raw key is returned here and nowhere else.
 */
export async function createApiKey(wallet: string, keyPrefix: string, clock: Clock, actor: Actor = wallet): Promise<{ record: ApiKeyRecord; apiKey: string }> {
  const apiKey = generateRawKey(keyPrefix)
  const digest = digestOf(apiKey)
  const { record, revoked } = await inWalletTransaction(wallet, async (tx) => {
    // Checked again under the lock: an allowlist removal that commits first wins.
    if (!(await tx.allowlistEntry.findUnique({ where: { address: wallet }, select: { address: true } }))) throw notWhitelisted()
    const now = clock()
    const revoked = await revokeCurrentKey(tx, wallet, now, 'replaced', actor)
    const record = await tx.apiKey.create({
      data: { id: randomUUID(), wallet, keyPrefix, digest, createdAt: now, expiresAt: new Date(now.getTime() + KEY_LIFETIME_MS) },
      select: recordFields,
    })
    await tx.keyEvent.create({ data: { at: now, wallet, keyId: record.id, action: 'created', actor } })
    return { record, revoked }
  })
  if (revoked) walletKeysChanged(wallet)
  return { record, apiKey }
}

/** The wallet's active key (unrevoked and unexpired at `now`), or null. */
export function activeApiKey(wallet: string, now: Date): Promise<ApiKeyRecord | null> {
  return prisma.apiKey.findFirst({ where: { wallet, revokedAt: null, expiresAt: { gt: now } }, select: recordFields })
}

/** Revokes the wallet's active key; false when it had none (an expired key is closed as `expired`, and still false). */
export async function revokeApiKey(wallet: string, clock: Clock, actor: Actor = wallet): Promise<boolean> {
  const revoked = await inWalletTransaction(wallet, (tx) => revokeCurrentKey(tx, wallet, clock(), 'user', actor))
  if (revoked) walletKeysChanged(wallet)
  return revoked?.reason === 'user'
}
