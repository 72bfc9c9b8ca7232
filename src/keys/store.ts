import { prisma } from '../db/client.js'
import type { KeyEventAction, KeyRevokeReason, Prisma, PrismaClient } from '../generated/prisma/client.js'
import { KEY_CHANNEL, PROCESS_ORIGIN } from './changes.js'

// Every statement about API keys, their audit trail and the allowlist: the key service
// (src/keys/service.ts), the allowlist (src/keys/allowlist.ts), the session check
// (src/auth/viewer.ts) and the verifier (src/keys/verifier.ts) go through here.

export type Tx = Prisma.TransactionClient

/** The API key record of spec §2 as stored (times as Dates; the GraphQL type turns them into ms). */
export interface ApiKeyRecord {
  id: string
  keyPrefix: string
  createdAt: Date
  expiresAt: Date
  revokedAt: Date | null
}

const recordFields = { id: true, keyPrefix: true, createdAt: true, expiresAt: true, revokedAt: true } as const

// ---------------------------------------------------------------------------------------------
// Keys

/** The wallet's unrevoked key (expired or not), if any. */
export const findUnrevokedKey = (tx: Tx, wallet: string) => tx.apiKey.findFirst({ where: { wallet, revokedAt: null }, select: { id: true, expiresAt: true } })

export async function markRevoked(tx: Tx, id: string, at: Date, reason: KeyRevokeReason): Promise<void> {
  await tx.apiKey.update({ where: { id }, data: { revokedAt: at, revokeReason: reason } })
}

export const insertKey = (
  tx: Tx,
  key: { id: string; wallet: string; keyPrefix: string; digest: string; createdAt: Date; expiresAt: Date },
): Promise<ApiKeyRecord> => tx.apiKey.create({ data: key, select: recordFields })

/** The wallet's active key (unrevoked and unexpired at `now`), or null. */
export const findActiveKey = (wallet: string, now: Date): Promise<ApiKeyRecord | null> =>
  prisma.apiKey.findFirst({ where: { wallet, revokedAt: null, expiresAt: { gt: now } }, select: recordFields })

/** Appends to the audit trail. `actor`: the wallet itself, `admin` or `system`. */
export async function recordKeyEvent(
  tx: Tx,
  event: { at: Date; wallet: string; keyId: string; action: KeyEventAction; reason?: KeyRevokeReason; actor: string },
): Promise<void> {
  await tx.keyEvent.create({ data: event })
}

/**
 * Queues a NOTIFY inside the transaction: PostgreSQL delivers it to other instances at commit, and
 * never on rollback. Payload: `<wallet> <origin>`.
 */
export async function notifyKeysChanged(tx: Tx, wallet: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_notify(${KEY_CHANNEL}, ${`${wallet} ${PROCESS_ORIGIN}`})`
}

/** One row of KEY_STATE_SQL: what the verifier needs to judge a presented key. */
export interface KeyStateRow {
  id: string
  wallet: string
  expires_at: Date
  revoked_at: Date | null
  revoke_reason: string | null
  allowlisted: boolean
}

/** The state of the key with a digest ($1): zero or one row. */
export const KEY_STATE_SQL = `
  SELECT k.id::text AS id, k.wallet, k.expires_at, k.revoked_at, k.revoke_reason::text AS revoke_reason,
         (a.address IS NOT NULL) AS allowlisted
  FROM api_keys k LEFT JOIN allowlist a ON a.address = k.wallet
  WHERE k.digest = $1`

/** Reads one key's state through a Prisma client (the SQL is a constant; the digest travels as a bind parameter). */
export const keyStateThrough = (client: Pick<PrismaClient, '$queryRawUnsafe'>) => (digest: string) =>
  client.$queryRawUnsafe<KeyStateRow[]>(KEY_STATE_SQL, digest)

// ---------------------------------------------------------------------------------------------
// Allowlist

export interface AllowlistEntryView {
  address: string
  note: string | null
  createdAt: Date
}

const entryFields = { address: true, note: true, createdAt: true } as const

/** Whether a (lowercase) address is on the allowlist; inside a transaction when given one. */
export async function isAllowlisted(address: string, tx: Tx = prisma): Promise<boolean> {
  return (await tx.allowlistEntry.findUnique({ where: { address }, select: { address: true } })) !== null
}

/** Inserts entries that are not there yet; returns how many were new. */
export async function insertAllowlistEntries(entries: { address: string; note: string | null }[]): Promise<number> {
  const { count } = await prisma.allowlistEntry.createMany({ data: entries, skipDuplicates: true })
  return count
}

export const updateAllowlistNote = (address: string, note: string): Promise<AllowlistEntryView> =>
  prisma.allowlistEntry.update({ where: { address }, data: { note }, select: entryFields })

export const findAllowlistEntry = (address: string): Promise<AllowlistEntryView> =>
  prisma.allowlistEntry.findUniqueOrThrow({ where: { address }, select: entryFields })

/** Deletes an entry inside the caller's transaction; true when there was one. */
export async function deleteAllowlistEntry(tx: Tx, address: string): Promise<boolean> {
  const { count } = await tx.allowlistEntry.deleteMany({ where: { address } })
  return count > 0
}

export const listAllowlistEntries = (): Promise<AllowlistEntryView[]> => prisma.allowlistEntry.findMany({ select: entryFields, orderBy: { address: 'asc' } })

// ---------------------------------------------------------------------------------------------
// The wallet lock

// Writes to one wallet's keys are serialised twice over. In this process, a queue per wallet: a
// request waits its turn without holding a database connection (so 100 concurrent creates need
// one connection, not 100, and never hit a pool or transaction-start timeout). Across processes,
// a transaction-scoped advisory lock on the wallet. The partial unique index
// api_keys_one_active_per_wallet stays the last line of defence.

const queues = new Map<string, Promise<unknown>>()

function queued<T>(wallet: string, work: () => Promise<T>): Promise<T> {
  const previous = queues.get(wallet) ?? Promise.resolve()
  const run = previous.then(work, work)
  const tail = run.catch(() => {})
  queues.set(wallet, tail)
  void tail.then(() => {
    if (queues.get(wallet) === tail) queues.delete(wallet)
  })
  return run
}

/** Namespace of our advisory locks (the first key of the two-key form), so other users of advisory locks cannot collide. */
const LOCK_CLASS = 0x76676b31 // "vgk1"

/** Runs `work` in a transaction that holds the wallet's lock, in this process and in the database. */
export function inWalletTransaction<T>(wallet: string, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return queued(wallet, () =>
    prisma.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int, hashtext(${wallet}))`
        return work(tx)
      },
      // Waiting for the advisory lock held by another instance counts against `timeout`.
      { maxWait: 10_000, timeout: 15_000 },
    ),
  )
}
