import type { Context as HonoContext } from 'hono'
import type { Config } from '../config.js'
import type { RateLimits } from '../core/rate-limit.js'
import type { ApiKeyVerifier } from '../keys/verifier.js'
import type { AppEnv } from './env.js'
import { errorResponse } from './errors.js'
import { notModified } from './etag.js'
import { policyHeaders } from './headers.js'
import { recordRequest } from './middleware/observability.js'
import { clientIp, countOnce } from './middleware/rate-limit.js'
import { graphqlCacheKey, pathAndQuery, type CachedResponse, type ResponseCache } from './response-cache.js'
import { internalAuthorized, VERIFY_BODY_LIMIT, verifyAnswer } from './verify-key.js'

// The answers dashboards and the order exchange repeat all day (public reads the response cache
// holds, and API key verifications) are given by the first middleware, before the rest of the
// chain: through it, every middleware that adds a header to the finished response makes
// @hono/node-server rebuild it and stream its body, which costs several times the hit itself.
// Here the headers are one plain object (policyHeaders, the routes' own policy), which
// @hono/node-server writes out directly. The rate limit, log line, metrics and request id are the
// routes' own functions. Anything not answered here (a miss, a client over its limit, a request
// that is not plain) goes on to the routes, with its body and its rate-limit count kept on the
// context. test/http/early-answers.test.ts compares both paths header by header.

export interface EarlyAnswerOptions {
  config: Pick<Config, 'cors' | 'internalToken' | 'trustProxyHops' | 'requests'>
  cache: ResponseCache
  limits: RateLimits
  verifier: ApiKeyVerifier
}

/** A numeric Content-Length within `max` on a request without Transfer-Encoding (so the body cannot exceed it). */
function boundedBody(c: HonoContext, max: number): boolean {
  const length = c.req.header('content-length')
  return length !== undefined && c.req.header('transfer-encoding') === undefined && /^\d+$/.test(length) && Number(length) <= max
}

/** The early-answer function for src/http/middleware/observability.ts requestStart. */
export function earlyAnswers({ config, cache, limits, verifier }: EarlyAnswerOptions): (c: HonoContext<AppEnv>) => Promise<Response | undefined> | undefined {
  const finish = (c: HonoContext<AppEnv>, route: string, status: number, body: string | null, own: Record<string, string>) => {
    const headers = {
      ...policyHeaders(config.cors, c.req.path, c.req.header('origin') ?? null, own['content-type'] ?? null),
      ...own,
      'x-request-id': c.get('requestId'),
    }
    recordRequest(c.get('requestId'), c.req.method, route, status, c.get('started'))
    return new Response(body, { status, headers })
  }

  /** A cached public answer, after the client's rate limit (an over-limit client gets the routes' 429). */
  async function servePublic(c: HonoContext<AppEnv>, entry: CachedResponse, route: string): Promise<Response | undefined> {
    try {
      await countOnce(c, limits, 'public', clientIp(c, config.trustProxyHops))
    } catch {
      return undefined
    }
    if (!entry.etag) return finish(c, route, 200, entry.body, { 'content-type': entry.contentType })
    const current = notModified(c.req.header('if-none-match'), entry.etag)
    return finish(c, route, current ? 304 : 200, current ? null : entry.body, {
      'content-type': entry.contentType,
      etag: entry.etag,
      'cache-control': entry.cacheControl!,
    })
  }

  async function graphql(c: HonoContext<AppEnv>): Promise<Response | undefined> {
    // Hono keeps the text: the routes read the same body if this is a miss.
    const entry = cache.hit(graphqlCacheKey(c.req.header('accept'), await c.req.text()))
    return entry ? servePublic(c, entry, '/graphql') : undefined
  }

  /** A verification is answered here whatever its outcome, errors included: it runs once. */
  async function verify(c: HonoContext<AppEnv>): Promise<Response> {
    const route = '/internal/v1/apiKey/verify'
    try {
      const body = await verifyAnswer(c, await c.req.text(), verifier, limits)
      return finish(c, route, 200, body, { 'content-type': 'application/json', 'cache-control': 'no-store' })
    } catch (e) {
      const res = errorResponse(c, e)
      const own: Record<string, string> = {}
      res.headers.forEach((value, name) => {
        own[name] = value
      })
      return finish(c, route, res.status, await res.text(), { ...own, 'cache-control': 'no-store' })
    }
  }

  return (c) => {
    const method = c.req.method
    if (method === 'GET') {
      if (!cache.enabled || !c.req.path.startsWith('/v1/')) return undefined
      const entry = cache.hit(`GET ${pathAndQuery(c.req.url)}`)
      if (!entry?.route) return undefined
      return servePublic(c, entry, entry.route)
    }
    if (method !== 'POST') return undefined
    const path = c.req.path
    if (path === '/graphql') {
      if (!cache.enabled || !(c.req.header('content-type') ?? '').includes('application/json') || !boundedBody(c, config.requests.bodyLimitBytes))
        return undefined
      return graphql(c)
    }
    if (path === '/internal/v1/apiKey/verify') {
      if (!internalAuthorized(config, c.req.header('authorization')) || !boundedBody(c, VERIFY_BODY_LIMIT)) return undefined
      return verify(c)
    }
    return undefined
  }
}
