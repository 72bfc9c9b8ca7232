import type { Deadline } from '../core/deadlines.js'
import type { Bucket, RateLimitState } from '../core/rate-limit.js'

/** What the early answers (src/http/early-answers.ts) hand on to the routes with a request, in Hono's env. */
export interface HandOn {
  counted: Partial<Record<Bucket, Promise<RateLimitState | null>>>
}

/**
 * Per-request state on Hono's context, set by the first middleware (src/app.ts) and read by the
 * later ones: how layers share what they learnt about one request, instead of side tables.
 */
export type AppEnv = {
  Variables: {
    requestId: string
    /** performance.now() when the request arrived (its duration in the log line and metrics). */
    started: number
    /** Set on the API routes (src/http/middleware/limits.ts); GraphQL's context takes its signal. */
    deadline?: Deadline
    /** Rate-limit verdicts taken for this request, by bucket: a request is counted once however many layers ask. */
    counted?: Partial<Record<Bucket, Promise<RateLimitState | null>>>
    /** A /graphql operation selecting key management (src/graphql/public-operations.ts): its answer gets the key-management header policy. */
    keyManagement?: boolean
    /** A read's Data-As-Of (src/http/headers.ts dataAsOfHeaders): set by the route that computed or found its answer. */
    dataAsOf?: string | null
    /** The client's identity for per-IP limits, set by the per-IP rate limit (src/http/middleware/rate-limit.ts limitByClientIp). */
    client?: string
  }
}
