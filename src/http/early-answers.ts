import type { Config } from '../config.js'
import { CLIENT_CLOSED_REQUEST } from '../core/deadlines.js'
import { errorBody } from '../core/errors.js'
import type { RateLimits } from '../core/rate-limit.js'
import type { HandOn } from './env.js'
import type { ApiKeyVerifier } from '../keys/verifier.js'
import { clientError } from './errors.js'
import { notModified } from './etag.js'
import { dataAsOfHeaders, policyHeaders, rateLimitHeaders } from './headers.js'
import { clientLeft, recordRequest, requestIdOf } from './middleware/observability.js'
import { clientIdOf } from './middleware/rate-limit.js'
import { graphqlCacheKey, pathAndQuery, type CachedResponse, type ResponseCache } from './response-cache.js'
import { internalAuthorized, VERIFY_BODY_LIMIT, verifyAnswer } from './verify-key.js'

// The answers dashboards and the order exchange repeat all day (public reads the response cache
// holds, and API key verifications) are given before the Hono app sees the request: through Hono,
// its dispatch and every middleware that adds a header to a finished response cost more than the
// hit itself (docs/adr/0003-early-answers.md has the measurement). The headers are one plain
// object from the routes' own header policy (policyHeaders, computed once per outcome), which
// @hono/node-server writes out directly; the rate limit, log line, metrics and request id are the
// routes' own functions. A request not answered here (a miss, a client over its limit) goes to the
// routes with what was learnt of it, passed explicitly in Hono's `env` (`handOn`): its body, as a
// copy of the request, and its rate-limit verdict, so that it is neither read nor counted twice.
// test/http/early-answers.test.ts compares both paths header by header.

type Routes = (request: Request, env: unknown) => Promise<Response>

export interface EarlyAnswerOptions {
  config: Pick<Config, 'cors' | 'internalToken' | 'trustProxyHops' | 'ipv6Prefix' | 'requests'>
  cache: ResponseCache
  limits: RateLimits
  verifier: ApiKeyVerifier
}

/** A numeric Content-Length within `max` on a request without Transfer-Encoding (so the body cannot exceed it). */
function boundedBody(request: Request, max: number): boolean {
  const length = request.headers.get('content-length')
  return length !== null && request.headers.get('transfer-encoding') === null && /^\d+$/.test(length) && Number(length) <= max
}

/**
 * Returns a promise of the answer when the request is one answered here, `undefined` otherwise (the
 * caller then hands the request to the routes untouched).
 */
export function earlyAnswers(
  { config, cache, limits, verifier }: EarlyAnswerOptions,
  routes: Routes,
): (request: Request, env: unknown) => Promise<Response> | undefined {
  // The policy headers depend only on the kind of answer and on whether the origin is allowed.
  const stamps = new Map<string, Record<string, string>>()
  const stamp = (path: string, origin: string | null, contentType: string) => {
    const allowed = config.cors.public
    const originKey = allowed === '*' || origin === null || !allowed.includes(origin) ? '' : origin
    const key = `${path === '/internal/v1/apiKey/verify' ? 'internal' : 'public'}\u0000${originKey}\u0000${contentType}`
    let headers = stamps.get(key)
    if (!headers) {
      headers = policyHeaders(config.cors, path, originKey === '' ? null : originKey, contentType, false)
      if (stamps.size < 256) stamps.set(key, headers)
    }
    return headers
  }

  const finish = (request: Request, route: string, started: number, status: number, body: string | null, own: Record<string, string>) => {
    const requestId = requestIdOf(request.headers.get('x-request-id'))
    const path = pathAndQuery(request.url).split('?')[0]!
    const headers = { ...stamp(path, request.headers.get('origin'), own['content-type'] ?? ''), ...own, 'x-request-id': requestId }
    recordRequest(requestId, request.method, route, status, started)
    return new Response(body, { status, headers })
  }

  const handOn = (request: Request, env: unknown, counted: HandOn['counted']) =>
    routes(request, { ...(env as object | undefined), handOn: { counted } satisfies HandOn })

  /** A cached public answer, after the client's rate limit (an over-limit client gets the routes' 429). */
  async function servePublic(request: Request, env: unknown, entry: CachedResponse, route: string, started: number, forward: () => Request): Promise<Response> {
    const verdict = limits.consume('public', clientIdOf(request.headers.get('x-forwarded-for'), env, config))
    verdict.catch(() => {})
    let state: Awaited<typeof verdict>
    try {
      state = await verdict
    } catch {
      return handOn(forward(), env, { public: verdict })
    }
    // This client's RateLimit fields, added to the shared entry's answer here (never stored in it).
    if (!entry.etag)
      return finish(request, route, started, 200, entry.body, {
        'content-type': entry.contentType,
        ...rateLimitHeaders(state, 200),
        ...dataAsOfHeaders(entry.dataAsOf, 200),
      })
    const current = notModified(request.headers.get('if-none-match'), entry.etag)
    const status = current ? 304 : 200
    return finish(request, route, started, status, current ? null : entry.body, {
      'content-type': entry.contentType,
      etag: entry.etag,
      'cache-control': entry.cacheControl!,
      ...rateLimitHeaders(state, status),
      ...dataAsOfHeaders(entry.dataAsOf, status),
    })
  }

  async function graphql(request: Request, env: unknown, started: number): Promise<Response> {
    let text: string
    try {
      text = await request.text()
    } catch (e) {
      // Gone in the middle of its body: nobody to answer, one request line at 499 (src/http/errors.ts clientError).
      if (clientLeft(env)) return finish(request, '/graphql', started, CLIENT_CLOSED_REQUEST, null, {})
      throw e
    }
    // The body is read: the routes get a copy of the request that carries it.
    const copy = () => new Request(request.url, { method: 'POST', headers: request.headers, body: text, signal: request.signal })
    const entry = cache.hit(graphqlCacheKey(request.headers.get('accept'), text))
    return entry ? servePublic(request, env, entry, '/graphql', started, copy) : handOn(copy(), env, {})
  }

  /** A verification is answered here whatever its outcome, errors included: it runs once. */
  async function verify(request: Request, env: unknown, started: number): Promise<Response> {
    const route = '/internal/v1/apiKey/verify'
    try {
      const { body, headers } = await verifyAnswer(await request.text(), verifier)
      return finish(request, route, started, 200, body, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers })
    } catch (e) {
      const { app, headers } = clientError(e, { requestId: requestIdOf(request.headers.get('x-request-id')), path: route, clientGone: clientLeft(env) })
      return finish(request, route, started, app.status, JSON.stringify(errorBody(app.code, app.message)), {
        ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])),
        'content-type': 'application/json',
        'cache-control': 'no-store',
      })
    }
  }

  return (request, env) => {
    // Handed on already, with what was counted (the hot path's give-back, src/http/hot/): the routes' own.
    if ((env as { handOn?: HandOn } | undefined)?.handOn) return undefined
    const method = request.method
    if (method === 'GET') {
      if (!cache.enabled) return undefined
      const path = pathAndQuery(request.url)
      if (!path.startsWith('/v1/')) return undefined
      const entry = cache.hit(`GET ${path}`)
      if (!entry?.route) return undefined
      return servePublic(request, env, entry, entry.route, performance.now(), () => request)
    }
    if (method !== 'POST') return undefined
    const path = pathAndQuery(request.url)
    if (path === '/graphql') {
      if (!cache.enabled || !(request.headers.get('content-type') ?? '').includes('application/json') || !boundedBody(request, config.requests.bodyLimitBytes))
        return undefined
      return graphql(request, env, performance.now())
    }
    if (path === '/internal/v1/apiKey/verify') {
      // The right token is served whatever wrong ones its address sent (src/http/middleware/bearer.ts);
      // a wrong one goes to the routes, which count it.
      if (!internalAuthorized(config, request.headers.get('authorization')) || !boundedBody(request, VERIFY_BODY_LIMIT)) return undefined
      return verify(request, env, performance.now())
    }
    return undefined
  }
}
