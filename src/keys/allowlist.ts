import type { Clock } from '../core/clock.js'
import type { Db } from '../db/client.js'
import { walletKeysChanged } from './changes.js'
import { type Actor, revokeCurrentKey } from './service.js'
import {
  type AllowlistEntryView,
  deleteAllowlistEntry,
  findAllowlistEntry,
  insertAllowlistEntries,
  inWalletTransaction,
  listAllowlistEntries,
  updateAllowlistNote,
} from './store.js'

export type { AllowlistEntryView }

/** Adds the addresses of the ALLOWLIST setting (already validated and lowercased); existing entries stay. */
export async function upsertAllowlist(db: Db, addresses: string[]): Promise<number> {
  if (addresses.length === 0) return 0
  return insertAllowlistEntries(
    db,
    addresses.map((address) => ({ address, note: 'ALLOWLIST' })),
  )
}

/** Adds a (lowercase) address; an existing entry keeps its date and gets the new note when one is given. */
export async function addToAllowlist(db: Db, address: string, note?: string): Promise<{ entry: AllowlistEntryView; added: boolean }> {
  const count = await insertAllowlistEntries(db, [{ address, note: note ?? null }])
  const entry = count === 0 && note !== undefined ? await updateAllowlistNote(db, address, note) : await findAllowlistEntry(db, address)
  return { entry, added: count === 1 }
}

/**
 * Removes an address and, in the same transaction, revokes its key (reason `allowlist_removed`),
 * so the key stops verifying at once on every instance, not only after the 30-second refresh.
 * Adding the address back does not bring the key back: the wallet creates a new one. A removal by
 * SQL outside the gateway revokes the key too (the trigger of migration
 * 20261127070653_allowlist_removal_revokes); here the key is revoked first, by `actor`, so that
 * trigger finds nothing left to revoke and the audit trail has one event.
 */
export async function removeFromAllowlist(
  db: Db,
  address: string,
  clock: Clock,
  actor: Actor = 'admin',
): Promise<{ removed: boolean; revokedKeyId: string | null }> {
  const result = await inWalletTransaction(db, address, async (tx) => {
    // Also when the entry was already gone: a key of a wallet off the allowlist must not stay unrevoked.
    const revoked = await revokeCurrentKey(tx, address, clock(), 'allowlist_removed', actor)
    const removed = await deleteAllowlistEntry(tx, address)
    return { removed, revokedKeyId: revoked?.id ?? null }
  })
  if (result.revokedKeyId) walletKeysChanged(address)
  return result
}

export function listAllowlist(db: Db): Promise<AllowlistEntryView[]> {
  return listAllowlistEntries(db)
}
