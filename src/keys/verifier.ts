import pg from 'pg'
import { systemClock, type Clock } from '../core/clock.js'
import type { PrismaClient } from '../generated/prisma/client.js'
import { KEY_CHANNEL, onWalletKeysChanged, parseKeyNotification, PROCESS_ORIGIN } from './changes.js'
import { digestOf, looksLikeRawKey } from './format.js'
import { createChangeFeed, type ChangeFeed } from '../db/listen.js'
import { KEY_STATE_SQL, keyStateThrough, type KeyStateRow } from './store.js'

export type { KeyStateRow }

export type InactiveReason = 'unknown' | 'revoked' | 'expired' | 'not_whitelisted'

/** docs/spec/decisions.md §7: what the order exchange learns about a presented key. */
export interface VerifyResult {
  active: boolean
  wallet: string | null
  keyId: string | null
  expiresAtMs: number | null
  /** Null when active. */
  reason: InactiveReason | null
}

/** The key state could not be read (database unreachable): callers must refuse the key, not call it unknown. */
export class VerifierUnavailableError extends Error {
  override name = 'VerifierUnavailableError'
}

interface KeyState {
  id: string
  wallet: string
  expiresAtMs: number
  revokedAtMs: number | null
  revokeReason: string | null
  allowlisted: boolean
}

interface Entry {
  /** Null: no key has this digest. */
  state: KeyState | null
  /** Clock reading taken before the read started, so an entry is never older than it claims. */
  loadedAt: number
}

export interface ApiKeyVerifierOptions {
  /** The gateway's Prisma client (one of `prisma` and `lookup` is required). */
  prisma?: Pick<PrismaClient, '$queryRawUnsafe'>
  /** Instead of `prisma`: how to read one key's state (e.g. through a pg pool). */
  lookup?: Lookup
  clock?: Clock
  /** How long key state may be served from memory; at most 30 s (spec §8). */
  cacheTtlMs?: number
  /** Bound on cached digests (known and unknown); the oldest go first. */
  maxEntries?: number
  /** Also drop cached state when this process revokes a key (default true). */
  localInvalidation?: boolean
  /** The gateway's change feed: revocations committed by other instances reach this cache at once. */
  changes?: ChangeFeed
  /** Instead of `changes`: a PostgreSQL connection to LISTEN on (a feed of the verifier's own). */
  listen?: pg.ClientConfig
  /**
   * The longest one read of key state may take (the gateway: DB_CONNECT_TIMEOUT_MS); past it the
   * key is refused as unavailable while the read goes on in the background. In a network partition
   * the database neither answers nor refuses, and the order exchange must not wait with it.
   */
  lookupTimeoutMs?: number
  /** Told whether each lookup was served from memory (the gateway counts them in its metrics). */
  onCacheLookup?: (hit: boolean) => void
}

export interface ApiKeyVerifier {
  verify(rawKey: string): Promise<VerifyResult>
  /** Drops cached state of one wallet's keys. */
  invalidateWallet(wallet: string): void
  /** Drops all cached state. */
  clear(): void
  /** Resolves once LISTEN is active (or its first attempt failed; it keeps retrying). */
  readonly ready: Promise<void>
  close(): Promise<void>
}

export const MAX_CACHE_TTL_MS = 30_000

const inactive = (reason: InactiveReason, s: KeyState | null): VerifyResult => ({
  active: false,
  wallet: s?.wallet ?? null,
  keyId: s?.id ?? null,
  expiresAtMs: s?.expiresAtMs ?? null,
  reason,
})

/**
 * The answer for a key state at `now`. Precedence: revoked (reported by why: a key revoked because
 * it had expired is `expired`, one revoked by an allowlist removal is `not_whitelisted`), then
 * expired, then a wallet no longer on the allowlist.
 */
export function judge(s: KeyState | null, now: number): VerifyResult {
  if (!s) return inactive('unknown', null)
  if (s.revokedAtMs !== null) {
    return inactive(s.revokeReason === 'expired' ? 'expired' : s.revokeReason === 'allowlist_removed' ? 'not_whitelisted' : 'revoked', s)
  }
  if (now >= s.expiresAtMs) return inactive('expired', s)
  if (!s.allowlisted) return inactive('not_whitelisted', s)
  return { active: true, wallet: s.wallet, keyId: s.id, expiresAtMs: s.expiresAtMs, reason: null }
}

type Row = KeyStateRow

/** Reads the state of the key with a digest: zero or one row. */
export type Lookup = (digest: string) => Promise<KeyStateRow[]>

/**
 * Checks API keys for the order exchange. Key state is cached per digest for at most `cacheTtlMs`;
 * expiry is judged on every call against the clock; revocations by this process drop the cache at
 * once, and with `listen`, so do revocations committed by other instances (NOTIFY), the TTL being
 * the fallback while that connection is down. When the state must be read and the database cannot
 * be reached, `verify` throws VerifierUnavailableError (fail closed).
 */
export function createApiKeyVerifier(options: ApiKeyVerifierOptions): ApiKeyVerifier {
  const clock = options.clock ?? systemClock
  const nowMs = () => clock().getTime()
  const ttl = Math.min(options.cacheTtlMs ?? MAX_CACHE_TTL_MS, MAX_CACHE_TTL_MS)
  const maxEntries = options.maxEntries ?? 10_000
  const cache = new Map<string, Entry>()
  const loading = new Map<string, Promise<Entry>>()
  // Bumped by every invalidation: a read that started before it must not refill the cache with
  // what may be the state from before the revocation.
  let epoch = 0

  // New calls after an invalidation must not join a read that may have started before it.
  const invalidateWallet = (wallet: string) => {
    epoch++
    loading.clear()
    for (const [digest, entry] of cache) if (entry.state?.wallet === wallet) cache.delete(digest)
  }
  const clear = () => {
    epoch++
    loading.clear()
    cache.clear()
  }

  if (!options.lookup && !options.prisma) throw new TypeError('createApiKeyVerifier needs `prisma` or `lookup`')
  const lookup: Lookup = options.lookup ?? keyStateThrough(options.prisma!)
  const lookupTimeout = options.lookupTimeoutMs

  async function load(digest: string): Promise<Entry> {
    const startedEpoch = epoch
    const loadedAt = nowMs()
    let rows: Row[]
    let timer: NodeJS.Timeout | undefined
    try {
      const read = lookup(digest)
      if (lookupTimeout === undefined) rows = await read
      else {
        read.catch(() => {})
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the key state read took longer than ${lookupTimeout} ms`)), lookupTimeout)
        })
        rows = await Promise.race([read, late])
      }
    } catch (e) {
      throw new VerifierUnavailableError('API key state cannot be read: the database is unavailable.', { cause: e })
    } finally {
      clearTimeout(timer)
    }
    const r = rows[0]
    const state: KeyState | null = r
      ? {
          id: r.id,
          wallet: r.wallet,
          expiresAtMs: r.expires_at.getTime(),
          revokedAtMs: r.revoked_at?.getTime() ?? null,
          revokeReason: r.revoke_reason,
          allowlisted: r.allowlisted,
        }
      : null
    const entry = { state, loadedAt }
    if (epoch === startedEpoch) {
      cache.delete(digest)
      cache.set(digest, entry)
      if (cache.size > maxEntries) cache.delete(cache.keys().next().value!)
    }
    return entry
  }

  function entryFor(digest: string): Promise<Entry> {
    const now = nowMs()
    const cached = cache.get(digest)
    const fresh = cached !== undefined && now - cached.loadedAt < ttl && now >= cached.loadedAt
    options.onCacheLookup?.(fresh)
    if (fresh) return Promise.resolve(cached)
    let pending = loading.get(digest)
    if (!pending) {
      const started: Promise<Entry> = load(digest).finally(() => {
        if (loading.get(digest) === started) loading.delete(digest)
      })
      loading.set(digest, started)
      pending = started
    }
    return pending
  }

  const local = options.localInvalidation !== false
  const unsubscribe = local ? onWalletKeysChanged(invalidateWallet) : () => {}
  // Notifications sent while the feed was down are lost: state cached meanwhile is dropped when it is back.
  const own = options.changes ? undefined : options.listen ? createChangeFeed({ connection: options.listen }) : undefined
  const feed = options.changes ?? own
  const offKeys = feed?.on(KEY_CHANNEL, (payload) => {
    const { wallet, origin } = parseKeyNotification(payload)
    // This process' own commits reached the cache already (local invalidation).
    if (!(local && origin === PROCESS_ORIGIN)) invalidateWallet(wallet)
  })
  const offLive = feed?.onLive((live) => {
    if (live) clear()
  })

  return {
    async verify(rawKey) {
      if (!looksLikeRawKey(rawKey)) return inactive('unknown', null)
      const entry = await entryFor(digestOf(rawKey))
      return judge(entry.state, nowMs())
    },
    invalidateWallet,
    clear,
    ready: feed?.ready ?? Promise.resolve(),
    async close() {
      unsubscribe()
      offKeys?.()
      offLive?.()
      await own?.close()
      cache.clear()
    },
  }
}

/**
 * For a service outside the gateway, such as the order exchange: a verifier with its own small
 * pool and LISTEN connection to the gateway's PostgreSQL database (read-only use: one SELECT).
 */
export function connectApiKeyVerifier(
  options: { databaseUrl: string; poolMax?: number } & Omit<ApiKeyVerifierOptions, 'prisma' | 'lookup' | 'listen'>,
): ApiKeyVerifier {
  const connection = { connectionString: options.databaseUrl, connectionTimeoutMillis: 5000, statement_timeout: 5000 }
  // As the gateway's pool (src/db/client.ts createPool): keep-alive and a client-side query timeout for partitions.
  const pool = new pg.Pool({
    ...connection,
    max: options.poolMax ?? 4,
    idleTimeoutMillis: 10_000,
    keepAlive: true,
    query_timeout: 10_000,
    application_name: 'vaultgate-verifier',
  })
  pool.on('error', () => {})
  const verifier = createApiKeyVerifier({
    lookupTimeoutMs: 5000,
    ...options,
    lookup: async (digest) => (await pool.query<KeyStateRow>(KEY_STATE_SQL, [digest])).rows,
    listen: connection,
  })
  return {
    ...verifier,
    ready: verifier.ready,
    async close() {
      await verifier.close()
      await pool.end()
    },
  }
}
