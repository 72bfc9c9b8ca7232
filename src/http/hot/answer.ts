import type { Config } from '../../config.js'
import { CLIENT_CLOSED_REQUEST, type Deadline } from '../../core/deadlines.js'
import { errorBody } from '../../core/errors.js'
import type { RateLimits, RateLimitState } from '../../core/rate-limit.js'
import { clientError, graphqlErrorBody } from '../errors.js'
import { policyHeaders, rateLimitHeaders, withVary } from '../headers.js'
import { recordRequest } from '../middleware/observability.js'
import type { ClientIdentityConfig } from '../middleware/rate-limit.js'
import type { Answer, Exchange } from './exchange.js'

// What the routes' middleware adds to every answer (src/app.ts: requestStart, responseHeaders,
// the rate limit), done by the hot path in one step with the same functions: the header policy,
// the client's RateLimit fields, X-Request-Id, the log line and the metrics.

/**
 * The client's public per-IP count, as the routes' rate-limit middleware takes it: where its
 * counter stands, or, when the count refuses (over the limit, or the limiter failed), the pending
 * verdict to hand back with the request so the routes answer it without counting again.
 */
export async function countPublic(
  x: Exchange,
  limits: RateLimits,
  who: ClientIdentityConfig,
): Promise<{ rateLimit: RateLimitState | null } | { counted: { public: Promise<RateLimitState | null> } }> {
  const verdict = limits.consume('public', x.clientId(who))
  verdict.catch(() => {})
  try {
    return { rateLimit: await verdict }
  } catch {
    return { counted: { public: verdict } }
  }
}

export interface Finish {
  config: Pick<Config, 'cors'>
  exchange: Exchange
  /** The request's path (no query): the header policy's input. */
  path: string
  /** The route pattern in the log line and metrics (Hono's routePath). */
  route: string
  requestId: string
  started: number
  keyManagement: boolean
  /** Where the client's per-IP counter stood after this request. */
  rateLimit: RateLimitState | null
  deadline?: Deadline
}

// The policy headers of the hot routes (all under /graphql or /v1/, so CORS paths) depend only on
// the origin, the content type and key management: computed once per combination, per configuration.
const policies = new WeakMap<Config['cors'], Map<string, Record<string, string>>>()
function policyOf(cors: Config['cors'], path: string, origin: string | null, contentType: string | null, keyManagement: boolean): Record<string, string> {
  let byKey = policies.get(cors)
  if (!byKey) policies.set(cors, (byKey = new Map()))
  const key = `${keyManagement ? 1 : 0}\u0000${origin ?? ''}\u0000${contentType ?? ''}`
  let policy = byKey.get(key)
  if (!policy) {
    policy = policyHeaders(cors, path, origin, contentType, keyManagement)
    // Origins are the client's to choose: a bounded number of combinations is kept.
    if (byKey.size < 256) byKey.set(key, policy)
  }
  return policy
}

/** `own`: the route's own headers, lowercase names. Policy headers are merged as responseHeaders() merges them. */
export function finish(f: Finish, status: number, own: Record<string, string>, body: string | null): Answer {
  const headers = own
  const policy = policyOf(f.config.cors, f.path, f.exchange.header('origin') ?? null, own['content-type'] ?? null, f.keyManagement)
  for (const name in policy) {
    const value = policy[name]!
    if (name === 'vary') headers.vary = withVary(headers.vary, value)
    else if (headers[name] === undefined || name.startsWith('access-control-') || name === 'cache-control') headers[name] = value
  }
  if (f.rateLimit && status < 400) Object.assign(headers, rateLimitHeaders(f.rateLimit, status))
  headers['x-request-id'] = f.requestId
  recordRequest(f.requestId, f.exchange.method, f.route, f.deadline?.clientGone ? CLIENT_CLOSED_REQUEST : status, f.started)
  return { status, headers, body }
}

/** Header names in lowercase (an error's own Retry-After, WWW-Authenticate). */
export function lowercased(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name in headers) out[name.toLowerCase()] = headers[name]!
  return out
}

/** An error before Yoga runs on /graphql, as the routes answer it (src/http/errors.ts graphqlErrorResponse). */
export function graphqlError(f: Finish, error: unknown): Answer {
  const { app, headers } = clientError(error, { requestId: f.requestId, path: f.path })
  return finish(
    f,
    app.status,
    { ...lowercased(headers), 'content-type': 'application/json', 'cache-control': 'no-store' },
    JSON.stringify(graphqlErrorBody(app)),
  )
}

/** The one REST error answer (src/http/errors.ts errorResponse), counted and logged by clientError. */
export function restError(f: Finish, error: unknown): Answer {
  const { app, headers } = clientError(error, { requestId: f.requestId, path: f.path, clientGone: f.exchange.client.aborted })
  return finish(f, app.status, { ...lowercased(headers), 'content-type': 'application/json' }, JSON.stringify(errorBody(app.code, app.message)))
}
