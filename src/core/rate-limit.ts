import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import { RateLimiterCompatibleAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible'
import type { Config } from '../config.js'
import { AppError } from './errors.js'
import { logger } from './log.js'
import { rateLimitDecisions } from './metrics.js'

/**
 * What a limit counts: client IPs on the public routes, wallets on key management, API keys on
 * the verify route, and client IPs presenting a wrong token, one budget per route family: admin,
 * internal and wallet session (a burst of wrong admin tokens never costs the order exchange's
 * internal calls from the same address anything).
 */
export type Bucket = 'public' | 'keys' | 'verify' | FailureBucket
export type FailureBucket = 'admin_token' | 'internal_token' | 'session_token'
const FAILURE_BUCKETS: readonly FailureBucket[] = ['admin_token', 'internal_token', 'session_token']

const WINDOW_SECONDS = 60
/** A Redis call slower than this counts as Redis being down (the request must not wait on it). */
const REDIS_COMMAND_TIMEOUT_MS = 500
/** After a Redis failure, requests are counted in process for this long before Redis is tried again. */
export const REDIS_COOLDOWN_MS = 10_000
/** At most one "Redis is down" warning per this many milliseconds. */
const WARN_EVERY_MS = 30_000

/** Where a counter stands after a request was counted (the verify answer's `rateLimit`, the RateLimit header). */
export interface RateLimitState {
  /** Requests allowed per window. */
  limit: number
  /** Requests left in the current window. */
  remaining: number
  /** Milliseconds until the window resets. */
  resetMs: number
}

/** The policy name of the per-client-IP limit in the RateLimit fields. */
export const PUBLIC_POLICY = 'ip'

/**
 * The IETF RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers-11: Structured
 * Field lists of a quoted policy name with `q`/`w`, and `r`/`t` in whole seconds) of the
 * per-client-IP limit at `state`.
 */
export function rateLimitFields(state: RateLimitState): { 'RateLimit-Policy': string; RateLimit: string } {
  return {
    'RateLimit-Policy': `"${PUBLIC_POLICY}";q=${state.limit};w=${WINDOW_SECONDS}`,
    RateLimit: `"${PUBLIC_POLICY}";r=${state.remaining};t=${Math.ceil(state.resetMs / 1000)}`,
  }
}

/**
 * rate-limiter-flexible's insurance limiter: the library calls it instead of Redis when a Redis
 * call fails (an error, or no answer within REDIS_COMMAND_TIMEOUT_MS). It counts in process and
 * tells the caller, through the call's options, that Redis failed (which starts the cool-down).
 */
class Insurance extends RateLimiterCompatibleAbstract {
  // Own properties (class fields are defined, not assigned): the base class' accessors only throw.
  override readonly keyPrefix: string
  override blockDuration = 0
  override execEvenly = false
  constructor(private readonly memory: RateLimiterMemory) {
    super()
    this.keyPrefix = memory.keyPrefix
  }
  private used(options: { [key: string]: unknown } | undefined) {
    ;(options?.onRedisFailure as (() => void) | undefined)?.()
  }
  override consume(key: string | number, points?: number, options?: { [key: string]: unknown }) {
    this.used(options)
    return this.memory.consume(key, points, options)
  }
  override penalty(key: string | number, points?: number, options?: { [key: string]: unknown }) {
    this.used(options)
    return this.memory.penalty(key, points, options)
  }
  override reward(key: string | number, points?: number, options?: { [key: string]: unknown }) {
    this.used(options)
    return this.memory.reward(key, points, options)
  }
  override get(key: string | number, options?: { [key: string]: unknown }) {
    this.used(options)
    return this.memory.get(key, options)
  }
  override set(key: string | number, points: number, secDuration: number, options?: { [key: string]: unknown }) {
    this.used(options)
    return this.memory.set(key, points, secDuration, options)
  }
  override block(key: string | number, secDuration: number, options?: { [key: string]: unknown }) {
    this.used(options)
    return this.memory.block(key, secDuration, options)
  }
  override delete(key: string | number, options?: { [key: string]: unknown }) {
    this.used(options)
    return this.memory.delete(key, options)
  }
}

export interface RateLimits {
  /**
   * Counts one request for `key` in `bucket`; throws AppError('rate_limited') with Retry-After when
   * over the limit. Resolves with where the counter stands, or null when the bucket is off (limit 0).
   */
  consume(bucket: Bucket, key: string): Promise<RateLimitState | null>
  /**
   * Throws the same rate_limited error while `key` is known here to be over its limit in `bucket`
   * (a consume in this process found it so and its window has not passed); no store round trip.
   */
  refuseIfLimited(bucket: Bucket, key: string): void
  /** Where the counters live: `redis` (shared by every instance) or `memory` (this process only). */
  readonly store: 'redis' | 'memory'
  /** True when the counters are where `store` says (Redis connected, or in-process). */
  ready(): Promise<boolean>
  close(): void
}

/**
 * Per-minute limits. With REDIS_URL the counters live in Redis and every instance shares them.
 * When Redis cannot answer (down, unreachable, slower than 500 ms) the request is counted in this
 * process instead (the insurance limiter), and so are all requests for the next REDIS_COOLDOWN_MS
 * before Redis is tried again: a stalled Redis costs one request 500 ms per cool-down, not every
 * request. Limits keep holding per instance rather than failing open or failing the request, and
 * a warning is logged (at most every 30 s).
 */
export function createRateLimits(
  config: Pick<Config, 'rateLimits' | 'redisUrl'> & Partial<Pick<Config, 'redisKeyPrefix'>>,
  { redisPrefix = config.redisKeyPrefix ?? 'vaultgate:rl', redisCooldownMs = REDIS_COOLDOWN_MS }: { redisPrefix?: string; redisCooldownMs?: number } = {},
): RateLimits {
  const points = {
    public: config.rateLimits.publicPerMinute,
    keys: config.rateLimits.keysPerMinute,
    verify: config.rateLimits.verifyPerMinute,
  } as Record<Bucket, number>
  for (const bucket of FAILURE_BUCKETS) points[bucket] = config.rateLimits.bearerFailuresPerMinute ?? 10
  let lastWarning = 0
  const warn = (err: unknown, message: string) => {
    if (Date.now() - lastWarning < WARN_EVERY_MS) return
    lastWarning = Date.now()
    logger.warn(err === undefined ? {} : { err: err instanceof Error ? { message: err.message } : String(err) }, message)
  }

  const memory = {} as Record<Bucket, RateLimiterMemory>
  const shared = {} as Record<Bucket, RateLimiterAbstract | undefined>
  for (const bucket of Object.keys(points) as Bucket[]) {
    memory[bucket] = new RateLimiterMemory({ keyPrefix: bucket, points: Math.max(points[bucket], 1), duration: WINDOW_SECONDS })
  }
  /** Until then requests are counted in process without asking Redis (the cool-down after a failure). */
  let redisDownUntil = 0
  const redisFailed = () => {
    redisDownUntil = Date.now() + redisCooldownMs
    warn(undefined, 'Redis unavailable: rate limits are counted per instance until it is back')
  }
  /** Keys found over their limit here, with when their window ends (bounded; the oldest go first). */
  const limitedUntil = new Map<string, number>()

  // ioredis is loaded only when REDIS_URL is set (it is a quarter of a second of every start
  // otherwise). Until it is connected, requests are counted in this process, as when Redis is down.
  let redis: Redis | undefined
  let closed = false
  const redisUrl = config.redisUrl
  const connecting = redisUrl
    ? import('ioredis').then(({ Redis }) => {
        if (closed) return
        redis = new Redis(redisUrl, {
          // Fail fast while disconnected (the in-process fallback answers) instead of queueing commands.
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
          connectTimeout: 2000,
          lazyConnect: false,
          retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
        })
        redis.on('error', (err) => warn(err, 'Redis unavailable: rate limits are counted per instance until it is back'))
        for (const bucket of Object.keys(points) as Bucket[]) {
          shared[bucket] = new RateLimiterRedis({
            storeClient: redis,
            keyPrefix: `${redisPrefix}:${bucket}`,
            points: Math.max(points[bucket], 1),
            duration: WINDOW_SECONDS,
            rejectIfRedisNotReady: true,
            insuranceLimiter: new Insurance(memory[bucket]),
          })
        }
      })
    : Promise.resolve()

  const retryIn = (bucket: Bucket, msBeforeNext: number) => {
    rateLimitDecisions.inc({ bucket, result: 'limited' })
    const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000))
    const what =
      bucket === 'public'
        ? 'from this address'
        : bucket === 'keys'
          ? 'for this wallet'
          : bucket === 'verify'
            ? 'for this key'
            : 'with a wrong token from this address'
    // The public answers carry the IETF fields on success (src/http/headers.ts); the 429 says 0 left.
    const fields = bucket === 'public' ? rateLimitFields({ limit: points.public, remaining: 0, resetMs: msBeforeNext }) : {}
    return new AppError('rate_limited', `Too many requests ${what}; retry in ${seconds} s.`, { headers: { 'Retry-After': String(seconds), ...fields } })
  }
  // Keys in the store are hashes: never a raw API key, wallet or IP in Redis.
  const idOf = (bucket: Bucket, key: string) => createHash('sha256').update(`${bucket}:${key}`).digest('base64url').slice(0, 32)

  return {
    store: redisUrl ? 'redis' : 'memory',
    ready: async () => {
      await connecting
      return !redisUrl || redis?.status === 'ready'
    },
    async consume(bucket, key) {
      if (points[bucket] <= 0) return null
      const id = idOf(bucket, key)
      const limiter = Date.now() >= redisDownUntil ? shared[bucket] : undefined
      let fellBack = false
      let res: RateLimiterRes
      try {
        if (limiter) {
          res = await limiter.consume(id, 1, { onRedisFailure: () => (fellBack = true) })
        } else {
          fellBack = !!redisUrl
          res = await memory[bucket].consume(id)
        }
      } catch (e) {
        if (!(e instanceof RateLimiterRes)) throw e
        if (limitedUntil.size >= 10_000) limitedUntil.delete(limitedUntil.keys().next().value!)
        limitedUntil.set(id, Date.now() + e.msBeforeNext)
        throw retryIn(bucket, e.msBeforeNext)
      } finally {
        if (limiter && fellBack) redisFailed()
      }
      rateLimitDecisions.inc({ bucket, result: fellBack ? 'fallback' : 'allowed' })
      return { limit: points[bucket], remaining: Math.max(0, res.remainingPoints), resetMs: Math.max(0, Math.ceil(res.msBeforeNext)) }
    },
    refuseIfLimited(bucket, key) {
      if (points[bucket] <= 0) return
      const id = idOf(bucket, key)
      const until = limitedUntil.get(id)
      if (until === undefined) return
      if (until <= Date.now()) limitedUntil.delete(id)
      else throw retryIn(bucket, until - Date.now())
    },
    close() {
      closed = true
      redis?.disconnect()
    },
  }
}

/**
 * One refused token from `client` in its route family's budget (RATE_LIMIT_BEARER_FAILURES_PER_MINUTE):
 * 429 while that client is over it (known here, no store round trip), else counted (429 once this
 * one goes over it). Accepted tokens never come here: the token is checked first, so the right one
 * is always served whoever else shares the address (src/http/middleware/bearer.ts, src/auth/viewer.ts).
 */
export async function countFailure(limits: RateLimits, bucket: FailureBucket, client: string): Promise<void> {
  limits.refuseIfLimited(bucket, client)
  await limits.consume(bucket, client)
}
