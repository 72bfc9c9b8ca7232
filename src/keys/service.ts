import { randomUUID } from 'node:crypto'
import type { Clock } from '../core/clock.js'
import type { Db } from '../db/client.js'
import { AppError } from '../core/errors.js'
import type { KeyRevokeReason } from '../generated/prisma/client.js'
import { walletKeysChanged } from './changes.js'
import { digestOf, generateRawKey, KEY_LIFETIME_MS } from './format.js'
import {
  type ApiKeyRecord,
  findActiveKey,
  findUnrevokedKey,
  inWalletTransaction,
  insertKey,
  isAllowlisted,
  markRevoked,
  notifyKeysChanged,
  recordKeyEvent,
  type Tx,
} from './store.js'

// The key lifecycle of spec §3: create (revoking the previous key in the same transaction),
// inspect, revoke; every change under the wallet's lock, with its audit event and its NOTIFY.

export type { ApiKeyRecord }

/** Who caused a change, for the audit trail: the wallet itself, `admin` or `system`. */
export type Actor = string

export const notWhitelisted = () => new AppError('not_whitelisted', 'This wallet is not on the allowlist.')

/**
 * Revokes the wallet's unrevoked key, if any, inside the caller's locked transaction, with an audit
 * event. A key that has already expired is recorded with reason `expired`, whatever the trigger.
 */
export async function revokeCurrentKey(
  tx: Tx,
  wallet: string,
  now: Date,
  reason: KeyRevokeReason,
  actor: Actor,
): Promise<{ id: string; reason: KeyRevokeReason } | undefined> {
  const current = await findUnrevokedKey(tx, wallet)
  if (!current) return undefined
  const effective: KeyRevokeReason = current.expiresAt.getTime() <= now.getTime() ? 'expired' : reason
  await markRevoked(tx, current.id, now, effective)
  await recordKeyEvent(tx, { at: now, wallet, keyId: current.id, action: 'revoked', reason: effective, actor })
  await notifyKeysChanged(tx, wallet)
  return { id: current.id, reason: effective }
}

/** What a key is created with (already validated: src/keys/inputs.ts). */
export interface NewKeySettings {
  keyPrefix: string
  name?: string | null
  /** Canonical networks; empty: any client IP. */
  allowedCidrs?: string[]
}

/**
 * Issues a new key for an allowlisted wallet; the previous key is revoked (`replaced`, or `expired`)
 * in the same transaction. The raw key is returned here and nowhere else.
 */
export async function createApiKey(
  db: Db,
  wallet: string,
  { keyPrefix, name = null, allowedCidrs = [] }: NewKeySettings,
  clock: Clock,
  actor: Actor = wallet,
): Promise<{ record: ApiKeyRecord; apiKey: string }> {
  const apiKey = generateRawKey(keyPrefix)
  const digest = digestOf(apiKey)
  const { record, revoked } = await inWalletTransaction(db, wallet, async (tx) => {
    // Checked again under the lock: an allowlist removal that commits first wins.
    if (!(await isAllowlisted(tx, wallet))) throw notWhitelisted()
    const now = clock()
    const revoked = await revokeCurrentKey(tx, wallet, now, 'replaced', actor)
    const record = await insertKey(tx, {
      id: randomUUID(),
      wallet,
      keyPrefix,
      digest,
      createdAt: now,
      expiresAt: new Date(now.getTime() + KEY_LIFETIME_MS),
      name,
      allowedCidrs,
    })
    await recordKeyEvent(tx, { at: now, wallet, keyId: record.id, action: 'created', actor })
    // Subscribers of apiKeyChanged (src/live/hub.ts) hear of the creation too; with a key revoked
    // above, its notification (the same payload, which PostgreSQL sends once) already says so.
    if (!revoked) await notifyKeysChanged(tx, wallet)
    return { record, revoked }
  })
  if (revoked) walletKeysChanged(wallet)
  return { record, apiKey }
}

/** The wallet's active key (unrevoked and unexpired at `now`), or null. */
export function activeApiKey(db: Db, wallet: string, now: Date): Promise<ApiKeyRecord | null> {
  return findActiveKey(db, wallet, now)
}

/** Revokes the wallet's active key; false when it had none (an expired key is closed as `expired`, and still false). */
export async function revokeApiKey(db: Db, wallet: string, clock: Clock, actor: Actor = wallet): Promise<boolean> {
  const revoked = await inWalletTransaction(db, wallet, (tx) => revokeCurrentKey(tx, wallet, clock(), 'user', actor))
  if (revoked) walletKeysChanged(wallet)
  return revoked?.reason === 'user'
}
