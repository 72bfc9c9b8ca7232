import { Hono, type MiddlewareHandler } from 'hono'
import type { Config } from '../config.js'
import type { ApiKeyVerifier } from '../keys/verifier.js'
import { notModified } from '../rest/route.js'
import type { AppEnv } from './env.js'
import { internalAuthorized, verifyAnswer, VERIFY_BODY_LIMIT } from './routes/internal.js'
import { recordRequest, requestIdOf } from './middleware/observability.js'
import { clientIpOf, consumeOnce, shareCount, type RateLimits } from '../core/rate-limit.js'
import { bodyReadAhead, graphqlCacheKey, pathAndQuery, type CachedResponse, type ResponseCache } from './response-cache.js'
import { contentSecurityPolicy, corsFor, securityHeaders } from './headers.js'

// The answers dashboards and the order exchange repeat all day — public reads the response cache
// holds, and API key verifications — are given here, before the Hono app: a cache hit through
// Hono's middleware chain costs several times the hit itself (every middleware that adds a header
// to the finished response makes @hono/node-server rebuild it and stream its body). Here the
// headers are one plain object, which @hono/node-server writes out directly.
//
// Same answer as the routes, by construction: the security and CORS headers are taken from
// the app's own middleware (run once per distinct CORS outcome, below); the rate limit, the log
// line, the metrics and the request id are the same functions the routes use. Anything not
// answered here (a miss, an error, a limit hit) goes to the routes, with the body when it was read
// and the rate-limit count when it was taken. test/fast-path.test.ts compares both paths.

type Slow = (request: Request, env: unknown) => Promise<Response>

export interface FastPathOptions {
  config: Pick<Config, 'cors' | 'internalToken' | 'trustProxyHops' | 'requests'>
  cache: ResponseCache
  limits: RateLimits
  verifier: ApiKeyVerifier
}

/** The headers `middleware` puts on a JSON answer to `path` (Content-Type and Content-Length excluded). */
async function stampOf(middleware: MiddlewareHandler<AppEnv>[], path: string, origin: string | undefined): Promise<Record<string, string>> {
  const probe = new Hono<AppEnv>()
  probe.use('*', ...middleware)
  probe.all('*', (c) => c.body('{}', 200, { 'Content-Type': 'application/json' }))
  const response = await probe.request(path, { headers: origin ? { origin } : {} })
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    if (name !== 'content-type' && name !== 'content-length') headers[name] = value
  })
  return headers
}

/** A numeric Content-Length within `max` on a request without Transfer-Encoding (so the body cannot exceed it). */
function boundedBody(request: Request, max: number): boolean {
  const length = request.headers.get('content-length')
  return length !== null && request.headers.get('transfer-encoding') === null && /^\d+$/.test(length) && Number(length) <= max
}

/**
 * Returns a promise of the answer when the request is one the fast path serves; `undefined` sends
 * it to the routes untouched.
 */
export function createFastPath({ config, cache, limits, verifier }: FastPathOptions, slow: Slow): (request: Request, env: unknown) => Promise<Response> | undefined {
  const publicMiddleware = [securityHeaders, contentSecurityPolicy, corsFor(config)]
  const stamps = new Map<string, Promise<Record<string, string>>>()
  /** Public routes: the CORS headers depend only on whether the origin is allowed. */
  const publicStamp = (origin: string | null) => {
    const allowed = config.cors.public
    const key = allowed === '*' ? '*' : origin !== null && allowed.includes(origin) ? origin : ''
    let stamp = stamps.get(key)
    if (!stamp) {
      stamp = stampOf(publicMiddleware, '/v1/vaults', key === '*' || key === '' ? undefined : key)
      stamps.set(key, stamp)
    }
    return stamp
  }
  const internalStamp = stampOf([securityHeaders, contentSecurityPolicy], '/internal/v1/apiKey/verify', undefined)

  const finish = (requestId: string, method: string, route: string, started: number, status: number, body: string | null, headers: Record<string, string>) => {
    recordRequest(requestId, method, route, status, started)
    return new Response(body, { status, headers })
  }

  /** A cached public answer, after the client's rate limit (an over-limit client gets the routes' 429). */
  async function servePublic(request: Request, env: unknown, entry: CachedResponse, route: string, started: number): Promise<Response> {
    const requestId = requestIdOf(request.headers.get('x-request-id'))
    try {
      await consumeOnce(limits, request, 'public', clientIpOf(request.headers.get('x-forwarded-for'), env, config.trustProxyHops))
    } catch {
      return slow(request, env)
    }
    const headers: Record<string, string> = { ...(await publicStamp(request.headers.get('origin'))), 'x-request-id': requestId, 'content-type': entry.contentType }
    if (!entry.etag) return finish(requestId, request.method, route, started, 200, entry.body, headers)
    headers['etag'] = entry.etag
    headers['cache-control'] = entry.cacheControl!
    const current = notModified(request.headers.get('if-none-match'), entry.etag)
    return finish(requestId, request.method, route, started, current ? 304 : 200, current ? null : entry.body, headers)
  }

  async function graphql(request: Request, env: unknown, started: number): Promise<Response> {
    const text = await request.text()
    // Whatever reaches the routes from here (a miss, an over-limit client) comes with its body.
    bodyReadAhead(request, text)
    const entry = cache.hit(graphqlCacheKey(request.headers.get('accept'), text))
    return entry ? servePublic(request, env, entry, '/graphql', started) : slow(request, env)
  }

  async function verify(request: Request, env: unknown, started: number): Promise<Response> {
    const text = await request.text()
    let body: string
    try {
      body = await verifyAnswer(text, request, verifier, limits)
    } catch {
      // The routes answer the error (the same verifyAnswer, the same rate-limit count).
      const forwarded = new Request(request.url, { method: 'POST', headers: request.headers, body: text, signal: request.signal })
      shareCount(request, forwarded)
      return slow(forwarded, env)
    }
    const requestId = requestIdOf(request.headers.get('x-request-id'))
    const headers = { ...(await internalStamp), 'x-request-id': requestId, 'cache-control': 'no-store', 'content-type': 'application/json' }
    return finish(requestId, 'POST', '/internal/v1/apiKey/verify', started, 200, body, headers)
  }

  return (request, env) => {
    const method = request.method
    if (method === 'GET') {
      if (!cache.enabled) return undefined
      const path = pathAndQuery(request.url)
      if (!path.startsWith('/v1/')) return undefined
      const entry = cache.hit(`GET ${path}`)
      if (!entry?.route) return undefined
      return servePublic(request, env, entry, entry.route, performance.now())
    }
    if (method !== 'POST') return undefined
    const path = pathAndQuery(request.url)
    if (path === '/graphql') {
      if (!cache.enabled || !(request.headers.get('content-type') ?? '').includes('application/json') || !boundedBody(request, config.requests.bodyLimitBytes)) return undefined
      return graphql(request, env, performance.now())
    }
    if (path === '/internal/v1/apiKey/verify') {
      if (!internalAuthorized(config, request.headers.get('authorization')) || !boundedBody(request, VERIFY_BODY_LIMIT)) return undefined
      return verify(request, env, performance.now())
    }
    return undefined
  }
}
