import type { Db } from '../db/client.js'
import { Prisma, type KeyEventAction, type KeyRevokeReason, type PrismaClient } from '../generated/prisma/client.js'
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
  name: string | null
  allowedCidrs: string[]
  lastUsedAt: Date | null
}

const recordFields = { id: true, keyPrefix: true, createdAt: true, expiresAt: true, revokedAt: true, name: true, allowedCidrs: true, lastUsedAt: true } as const

// ---------------------------------------------------------------------------------------------
// Keys

/** The wallet's unrevoked key (expired or not), if any. */
export const findUnrevokedKey = (tx: Tx, wallet: string) => tx.apiKey.findFirst({ where: { wallet, revokedAt: null }, select: { id: true, expiresAt: true } })

export async function markRevoked(tx: Tx, id: string, at: Date, reason: KeyRevokeReason): Promise<void> {
  await tx.apiKey.update({ where: { id }, data: { revokedAt: at, revokeReason: reason } })
}

export const insertKey = (
  tx: Tx,
  key: { id: string; wallet: string; keyPrefix: string; digest: string; createdAt: Date; expiresAt: Date; name: string | null; allowedCidrs: string[] },
): Promise<ApiKeyRecord> => tx.apiKey.create({ data: key, select: recordFields })

/** The wallet's active key (unrevoked and unexpired at `now`), or null. */
export const findActiveKey = (db: Db, wallet: string, now: Date): Promise<ApiKeyRecord | null> =>
  db.apiKey.findFirst({ where: { wallet, revokedAt: null, expiresAt: { gt: now } }, select: recordFields })

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
  /** Canonical networks (src/keys/cidr.ts); empty: any client IP. */
  allowed_cidrs: string[]
}

/** The state of the key with a digest ($1): zero or one row. */
export const KEY_STATE_SQL = `
  SELECT k.id::text AS id, k.wallet, k.expires_at, k.revoked_at, k.revoke_reason::text AS revoke_reason,
         (a.address IS NOT NULL) AS allowlisted, COALESCE(k.allowed_cidrs, '{}') AS allowed_cidrs
  FROM api_keys k LEFT JOIN allowlist a ON a.address = k.wallet
  WHERE k.digest = $1`

/** Reads one key's state through a Prisma client (the SQL is a constant; the digest travels as a bind parameter). */
export const keyStateThrough = (client: Pick<PrismaClient, '$queryRawUnsafe'>) => (digest: string) =>
  client.$queryRawUnsafe<KeyStateRow[]>(KEY_STATE_SQL, digest)

// ---------------------------------------------------------------------------------------------
// Usage and last use (written in batches by src/keys/usage.ts)

/**
 * One flush of the usage batch, one statement: `last_used_at` of keys used since the last flush
 * (arrays $1 key ids, $2 Unix ms), and verification counts added to their (key, UTC day, outcome)
 * rows ($3 key ids, $4 days since 1970-01-01, $5 outcomes, $6 counts). A key's `last_used_at`
 * only moves forward, and by at least a minute, whichever instance writes it, so the row changes
 * at most once a minute per key across every instance. Counts of a key deleted meanwhile are
 * dropped (the join). Every array travels as text and is cast here.
 */
export const FLUSH_USAGE_SQL = `
  WITH used AS (
    UPDATE api_keys k SET last_used_at = u.at
    FROM (SELECT id, timestamptz 'epoch' + ms * interval '1 millisecond' AS at
          FROM unnest($1::text[]::uuid[], $2::text[]::bigint[]) AS t(id, ms)) u
    WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at <= u.at - interval '1 minute')
    RETURNING k.id
  ), counted AS (
    INSERT INTO api_key_usage (key_id, day, outcome, count)
    SELECT c.id, DATE '1970-01-01' + c.day, c.outcome::"KeyVerifyOutcome", c.n
    FROM unnest($3::text[]::uuid[], $4::text[]::int[], $5::text[], $6::text[]::bigint[]) AS c(id, day, outcome, n)
    JOIN api_keys k ON k.id = c.id
    ON CONFLICT (key_id, day, outcome) DO UPDATE SET count = api_key_usage.count + EXCLUDED.count
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM used)::int AS last_used, (SELECT count(*) FROM counted)::int AS counted`

/** The parameters of FLUSH_USAGE_SQL, in order. */
export type FlushUsageParams = [string[], string[], string[], string[], string[], string[]]

/** Runs FLUSH_USAGE_SQL through a Prisma client; the rows it wrote. */
export const flushUsageThrough =
  (client: Pick<PrismaClient, '$queryRawUnsafe'>) =>
  async (params: FlushUsageParams): Promise<{ lastUsed: number; counted: number }> => {
    const [row] = await client.$queryRawUnsafe<{ last_used: number; counted: number }[]>(FLUSH_USAGE_SQL, ...params)
    return { lastUsed: Number(row?.last_used ?? 0), counted: Number(row?.counted ?? 0) }
  }

/** Retention: usage rows of days before `firstKept` (a UTC date, `YYYY-MM-DD`); how many went. */
export async function deleteUsageBefore(db: Db, firstKept: string): Promise<number> {
  return db.$executeRaw`DELETE FROM api_key_usage WHERE day < ${firstKept}::date`
}

export interface UsageRow {
  key_id: string
  key_prefix: string
  name: string | null
  /** `YYYY-MM-DD` (UTC). */
  day: string
  outcome: string
  /** A bigint as text. */
  count: string
}

/** The wallet's usage rows from `since` (`YYYY-MM-DD`) on, newest day first, then newest key first. */
export const usageRows = (db: Db, wallet: string, since: string): Promise<UsageRow[]> => db.$queryRaw<UsageRow[]>`
  SELECT u.key_id::text AS key_id, k.key_prefix, k.name, to_char(u.day, 'YYYY-MM-DD') AS day, u.outcome::text AS outcome, u.count::text AS count
  FROM api_key_usage u JOIN api_keys k ON k.id = u.key_id
  WHERE k.wallet = ${wallet} AND u.day >= ${since}::date
  ORDER BY u.day DESC, k.created_at DESC, u.key_id, u.outcome`

// ---------------------------------------------------------------------------------------------
// Key history (the owner's view of the audit trail)

/** One entry of a wallet's key history (docs/spec/decisions.md §13). */
export interface KeyHistoryRow {
  type: 'created' | 'revoked' | 'expired' | 'disabled' | 'replaced'
  key_id: string
  key_prefix: string
  at: Date
  /** key_events.id as text; "0" for an expiry (no row is written when a key expires). */
  seq: string
}

/** Where a history page continues: the last entry of the previous page. */
export interface KeyHistoryPosition {
  at: Date
  seq: string
  keyId: string
}

/**
 * A page of the wallet's key history, newest first (time, then event id, then key id, all
 * descending). Audit rows map to types by action and reason; an expiry writes no row, so one
 * `expired` entry per key that was still unrevoked when it expired is made from its `expires_at`
 * (once that is at or before `now`), and the `revoked`/`expired` row a later create or revoke
 * wrote for such a key is left out in its favour: the entry is dated when the key stopped working.
 */
export function keyHistoryPage(db: Db, wallet: string, now: Date, after: KeyHistoryPosition | null, limit: number): Promise<KeyHistoryRow[]> {
  const continueAfter =
    after === null
      ? Prisma.empty
      : Prisma.sql`WHERE (ev.at, ev.seq, ev.key_id) < (${after.at.toISOString()}::timestamptz, ${after.seq}::bigint, ${after.keyId}::uuid)`
  return db.$queryRaw<KeyHistoryRow[]>`
    SELECT ev.type, ev.key_id::text AS key_id, ev.key_prefix, ev.at, ev.seq::text AS seq FROM (
      SELECT CASE WHEN e.action = 'created' THEN 'created'
                  WHEN e.reason = 'replaced' THEN 'replaced'
                  WHEN e.reason = 'allowlist_removed' THEN 'disabled'
                  ELSE 'revoked' END AS type,
             e.key_id, k.key_prefix, e.at, e.id AS seq
      FROM key_events e JOIN api_keys k ON k.id = e.key_id
      WHERE e.wallet = ${wallet} AND NOT (e.action = 'revoked' AND e.reason IS NOT DISTINCT FROM 'expired')
      UNION ALL
      SELECT 'expired', k.id, k.key_prefix, k.expires_at, 0::bigint
      FROM api_keys k
      WHERE k.wallet = ${wallet} AND k.expires_at <= ${now.toISOString()}::timestamptz AND (k.revoked_at IS NULL OR k.revoke_reason = 'expired')
    ) ev
    ${continueAfter}
    ORDER BY ev.at DESC, ev.seq DESC, ev.key_id DESC
    LIMIT ${limit}`
}

// ---------------------------------------------------------------------------------------------
// Allowlist

export interface AllowlistEntryView {
  address: string
  note: string | null
  createdAt: Date
}

const entryFields = { address: true, note: true, createdAt: true } as const

/** Whether a (lowercase) address is on the allowlist (`db`: a client or the caller's transaction). */
export async function isAllowlisted(db: Db | Tx, address: string): Promise<boolean> {
  return (await db.allowlistEntry.findUnique({ where: { address }, select: { address: true } })) !== null
}

/** Inserts entries that are not there yet; returns how many were new. */
export async function insertAllowlistEntries(db: Db, entries: { address: string; note: string | null }[]): Promise<number> {
  const { count } = await db.allowlistEntry.createMany({ data: entries, skipDuplicates: true })
  return count
}

export const updateAllowlistNote = (db: Db, address: string, note: string): Promise<AllowlistEntryView> =>
  db.allowlistEntry.update({ where: { address }, data: { note }, select: entryFields })

export const findAllowlistEntry = (db: Db, address: string): Promise<AllowlistEntryView> =>
  db.allowlistEntry.findUniqueOrThrow({ where: { address }, select: entryFields })

/** Deletes an entry inside the caller's transaction; true when there was one. */
export async function deleteAllowlistEntry(tx: Tx, address: string): Promise<boolean> {
  const { count } = await tx.allowlistEntry.deleteMany({ where: { address } })
  return count > 0
}

export const listAllowlistEntries = (db: Db): Promise<AllowlistEntryView[]> => db.allowlistEntry.findMany({ select: entryFields, orderBy: { address: 'asc' } })

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
export function inWalletTransaction<T>(db: Db, wallet: string, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return queued(wallet, () =>
    db.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int, hashtext(${wallet}))`
        return work(tx)
      },
      // Waiting for the advisory lock held by another instance counts against `timeout`.
      { maxWait: 10_000, timeout: 15_000 },
    ),
  )
}
