import type { Clock } from '../core/clock.js'
import { prisma } from '../db/client.js'
import { walletKeysChanged } from './changes.js'
import { revokeCurrentKey, type Actor } from './service.js'
import { inWalletTransaction } from './wallet-lock.js'

/** Adds the addresses of the ALLOWLIST setting (already validated and lowercased); existing entries stay. */
export async function upsertAllowlist(addresses: string[]): Promise<number> {
  if (addresses.length === 0) return 0
  const { count } = await prisma.allowlistEntry.createMany({
    data: addresses.map((address) => ({ address, note: 'ALLOWLIST' })),
    skipDuplicates: true,
  })
  return count
}

export interface AllowlistEntryView {
  address: string
  note: string | null
  createdAt: Date
}

const entryFields = { address: true, note: true, createdAt: true } as const

/** Adds a (lowercase) address; an existing entry keeps its date and gets the new note when one is given. */
export async function addToAllowlist(address: string, note?: string): Promise<{ entry: AllowlistEntryView; added: boolean }> {
  const { count } = await prisma.allowlistEntry.createMany({ data: [{ address, note: note ?? null }], skipDuplicates: true })
  const entry =
    count === 0 && note !== undefined
      ? await prisma.allowlistEntry.update({ where: { address }, data: { note }, select: entryFields })
      : await prisma.allowlistEntry.findUniqueOrThrow({ where: { address }, select: entryFields })
  return { entry, added: count === 1 }
}

/**
 * Removes an address and, in the same transaction, revokes its key (reason `allowlist_removed`),
 * so the key stops verifying at once on every instance, not only after the 30-second refresh.
 * Adding the address back does not bring the key back: the wallet creates a new one.
 */
export async function removeFromAllowlist(address: string, clock: Clock, actor: Actor = 'admin'): Promise<{ removed: boolean; revokedKeyId: string | null }> {
  const result = await inWalletTransaction(address, async (tx) => {
    const { count } = await tx.allowlistEntry.deleteMany({ where: { address } })
    // Also when the entry was already gone: a key of a wallet off the allowlist must not stay unrevoked.
    const revoked = await revokeCurrentKey(tx, address, clock(), 'allowlist_removed', actor)
    return { removed: count > 0, revokedKeyId: revoked?.id ?? null }
  })
  if (result.revokedKeyId) walletKeysChanged(address)
  return result
}

export function listAllowlist(): Promise<AllowlistEntryView[]> {
  return prisma.allowlistEntry.findMany({ select: entryFields, orderBy: { address: 'asc' } })
}
