import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible'
import type { Config } from '../config.js'
import { AppError } from './errors.js'
import { logger } from './log.js'
import { rateLimitDecisions } from './metrics.js'

/**
 * What a limit counts: client IPs on the public routes, wallets on key management, API keys on
 * the verify route.
 */
export type Bucket = 'public' | 'keys' | 'verify'

const WINDOW_SECONDS = 60
/** A Redis call slower than this counts as Redis being down (the request must not wait on it). */
const REDIS_COMMAND_TIMEOUT_MS = 500
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

export interface RateLimits {
  /**
   * Counts one request for `key` in `bucket`; throws AppError('rate_limited') with Retry-After when
   * over the limit. Resolves with where the counter stands, or null when the bucket is off (limit 0).
   */
  consume(bucket: Bucket, key: string): Promise<RateLimitState | null>
  /** Where the counters live: `redis` (shared by every instance) or `memory` (this process only). */
  readonly store: 'redis' | 'memory'
  /** True when the counters are where `store` says (Redis connected, or in-process). */
  ready(): Promise<boolean>
  close(): void
}

/**
 * Per-minute limits. With REDIS_URL the counters live in Redis and every instance shares them.
 * When Redis cannot answer (down, unreachable, slower than 500 ms) the request is counted in this
 * process instead: limits keep holding per instance rather than failing open or failing the
 * request, and a warning is logged (at most every 30 s).
 */
export function createRateLimits(config: Pick<Config, 'rateLimits' | 'redisUrl'>, { redisPrefix = 'vaultgate:rl' }: { redisPrefix?: string } = {}): RateLimits {
  const points: Record<Bucket, number> = {
    public: config.rateLimits.publicPerMinute,
    keys: config.rateLimits.keysPerMinute,
    verify: config.rateLimits.verifyPerMinute,
  }
  let lastWarning = 0
  const warn = (err: unknown, message: string) => {
    if (Date.now() - lastWarning < WARN_EVERY_MS) return
    lastWarning = Date.now()
    logger.warn({ err: err instanceof Error ? { message: err.message } : String(err) }, message)
  }

  const memory = {} as Record<Bucket, RateLimiterMemory>
  const shared = {} as Record<Bucket, RateLimiterAbstract | undefined>
  for (const bucket of Object.keys(points) as Bucket[]) {
    memory[bucket] = new RateLimiterMemory({ keyPrefix: bucket, points: Math.max(points[bucket], 1), duration: WINDOW_SECONDS })
  }

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
          })
        }
      })
    : Promise.resolve()

  const tooMany = (bucket: Bucket, res: RateLimiterRes) => {
    rateLimitDecisions.inc({ bucket, result: 'limited' })
    const seconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000))
    const what = bucket === 'public' ? 'from this address' : bucket === 'keys' ? 'for this wallet' : 'for this key'
    // The public answers carry the IETF fields on success (src/http/headers.ts); the 429 says 0 left.
    const fields = bucket === 'public' ? rateLimitFields({ limit: points.public, remaining: 0, resetMs: res.msBeforeNext }) : {}
    return new AppError('rate_limited', `Too many requests ${what}; retry in ${seconds} s.`, { headers: { 'Retry-After': String(seconds), ...fields } })
  }

  const stateOf = (bucket: Bucket, res: RateLimiterRes): RateLimitState => ({
    limit: points[bucket],
    remaining: Math.max(0, res.remainingPoints),
    resetMs: Math.max(0, Math.ceil(res.msBeforeNext)),
  })

  return {
    store: redisUrl ? 'redis' : 'memory',
    ready: async () => {
      await connecting
      return !redisUrl || redis?.status === 'ready'
    },
    async consume(bucket, key) {
      if (points[bucket] <= 0) return null
      // Keys in the store are hashes: never a raw API key, wallet or IP in Redis.
      const id = createHash('sha256').update(`${bucket}:${key}`).digest('base64url').slice(0, 32)
      const limiter = shared[bucket]
      try {
        if (limiter) {
          try {
            const res = await limiter.consume(id)
            rateLimitDecisions.inc({ bucket, result: 'allowed' })
            return stateOf(bucket, res)
          } catch (e) {
            if (e instanceof RateLimiterRes) throw e
            warn(e, 'Redis unavailable: rate limits are counted per instance until it is back')
            rateLimitDecisions.inc({ bucket, result: 'fallback' })
          }
        } else if (redisUrl) rateLimitDecisions.inc({ bucket, result: 'fallback' })
        const res = await memory[bucket].consume(id)
        if (!redisUrl) rateLimitDecisions.inc({ bucket, result: 'allowed' })
        return stateOf(bucket, res)
      } catch (e) {
        if (e instanceof RateLimiterRes) throw tooMany(bucket, e)
        throw e
      }
    },
    close() {
      closed = true
      redis?.disconnect()
    },
  }
}
