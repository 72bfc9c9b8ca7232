import pg from 'pg'
import { systemClock, type Clock } from '../core/clock.js'
import type { PrismaClient } from '../generated/prisma/client.js'
import { KEY_CHANNEL, onWalletKeysChanged, parseKeyNotification, PROCESS_ORIGIN } from './changes.js'
import type { RateLimitState } from '../core/rate-limit.js'
import { cidrMatcher, type CidrMatcher } from './cidr.js'
import { digestOf, looksLikeRawKey } from './format.js'
import { createChangeFeed, type ChangeFeed } from '../db/listen.js'
import { FLUSH_USAGE_SQL, KEY_STATE_SQL, keyStateThrough, type KeyStateRow } from './store.js'
import { createUsageRecorder, type UsageRecorder, type VerifyOutcome } from './usage.js'

export type { KeyStateRow, RateLimitState, UsageRecorder }

export type InactiveReason = 'unknown' | 'revoked' | 'expired' | 'not_whitelisted' | 'ip_not_allowed'

/** docs/spec/decisions.md §7 and §13: what the order exchange learns about a presented key. */
export interface VerifyResult {
  active: boolean
  wallet: string | null
  keyId: string | null
  expiresAtMs: number | null
  /** Milliseconds until the key expires (0 once it has), at the time of the verification; null for an unknown key. */
  expiresInMs: number | null
  /** Null when active. */
  reason: InactiveReason | null
  /** The key's verification budget after this verification (the `limiter` option); null without one, or when it is off. */
  rateLimit: RateLimitState | null
}

/** What the caller knows of the request a key came with. */
export interface VerifyOptions {
  /** The client's IP address as the order exchange saw it: a key with allowedCidrs is refused (`ip_not_allowed`) outside them, or without one. */
  clientIp?: string
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
  /** Null: any client IP. */
  cidrs: CidrMatcher | null
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
  /**
   * Counts each verification against the presented key's budget before it is judged (the gateway:
   * RATE_LIMIT_VERIFY_PER_MINUTE); throws to refuse it. Its state is the answer's `rateLimit`.
   */
  limiter?: (rawKey: string) => Promise<RateLimitState | null>
  /** Where verifications of known keys are counted and `lastUsedAt` is batched (src/keys/usage.ts). */
  usage?: UsageRecorder
}

export interface ApiKeyVerifier {
  verify(rawKey: string, options?: VerifyOptions): Promise<VerifyResult>
  /** Drops cached state of one wallet's keys. */
  invalidateWallet(wallet: string): void
  /** Drops all cached state. */
  clear(): void
  /** Resolves once LISTEN is active (or its first attempt failed; it keeps retrying). */
  readonly ready: Promise<void>
  close(): Promise<void>
}

export const MAX_CACHE_TTL_MS = 30_000

const answer = (s: KeyState | null, now: number, reason: InactiveReason | null, rateLimit: RateLimitState | null): VerifyResult => ({
  active: reason === null,
  wallet: s?.wallet ?? null,
  keyId: s?.id ?? null,
  expiresAtMs: s?.expiresAtMs ?? null,
  expiresInMs: s ? Math.max(0, s.expiresAtMs - now) : null,
  reason,
  rateLimit,
})

/**
 * Why a key state is not active at `now` for `clientIp`, or null when it is. Precedence: revoked
 * (reported by why: a key revoked because it had expired is `expired`, one revoked by an allowlist
 * removal is `not_whitelisted`), then expired, then a wallet no longer on the allowlist, then a
 * client outside the key's networks (or none given to a key that has some).
 */
export function judge(s: KeyState | null, now: number, clientIp?: string): InactiveReason | null {
  if (!s) return 'unknown'
  if (s.revokedAtMs !== null) return s.revokeReason === 'expired' ? 'expired' : s.revokeReason === 'allowlist_removed' ? 'not_whitelisted' : 'revoked'
  if (now >= s.expiresAtMs) return 'expired'
  if (!s.allowlisted) return 'not_whitelisted'
  if (s.cidrs !== null && (clientIp === undefined || !s.cidrs(clientIp))) return 'ip_not_allowed'
  return null
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
          cidrs: r.allowed_cidrs?.length ? cidrMatcher(r.allowed_cidrs) : null,
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

  const { limiter, usage } = options
  return {
    async verify(rawKey, verifyOptions) {
      const rateLimit = limiter ? await limiter(rawKey) : null
      if (!looksLikeRawKey(rawKey)) return answer(null, 0, 'unknown', rateLimit)
      const { state } = await entryFor(digestOf(rawKey))
      const now = nowMs()
      const reason = judge(state, now, verifyOptions?.clientIp)
      // Batched in memory (src/keys/usage.ts): no SQL on this path.
      if (state && usage) usage.record(state.id, (reason ?? 'active') as VerifyOutcome, now)
      return answer(state, now, reason, rateLimit)
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

/** How often connectApiKeyVerifier writes usage counts and last-use times (the gateway's API_KEY_USAGE_FLUSH_MS default). */
export const DEFAULT_USAGE_FLUSH_MS = 10_000

/**
 * For a service outside the gateway, such as the order exchange: a verifier with its own small
 * pool and LISTEN connection to the gateway's PostgreSQL database. It reads key state with one
 * SELECT and, like the gateway's verifier, records each verification of a known key (usage
 * counts and `lastUsedAt`, written in batches every `usageFlushMs`, and on close); with
 * `recordUsage: false` it only reads.
 */
export function connectApiKeyVerifier(
  options: { databaseUrl: string; poolMax?: number; recordUsage?: boolean; usageFlushMs?: number } & Omit<
    ApiKeyVerifierOptions,
    'prisma' | 'lookup' | 'listen' | 'usage'
  >,
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
  const usage =
    options.recordUsage === false
      ? undefined
      : createUsageRecorder({
          flushMs: options.usageFlushMs ?? DEFAULT_USAGE_FLUSH_MS,
          write: async (params) => {
            const row = (await pool.query<{ last_used: number; counted: number }>(FLUSH_USAGE_SQL, params)).rows[0]
            return { lastUsed: Number(row?.last_used ?? 0), counted: Number(row?.counted ?? 0) }
          },
        })
  const verifier = createApiKeyVerifier({
    lookupTimeoutMs: 5000,
    ...options,
    usage,
    lookup: async (digest) => (await pool.query<KeyStateRow>(KEY_STATE_SQL, [digest])).rows,
    listen: connection,
  })
  return {
    ...verifier,
    ready: verifier.ready,
    async close() {
      await verifier.close()
      await usage?.close()
      await pool.end()
    },
  }
}
