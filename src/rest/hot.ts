import { getQueryParams } from 'hono/utils/url'
import type { Config } from '../config.js'
import { Deadline } from '../core/deadlines.js'
import type { RateLimits } from '../core/rate-limit.js'
import type { Freshness } from '../freshness/status.js'
import type { Yoga } from '../graphql/yoga.js'
import { notModified } from '../http/etag.js'
import { dataAsOfHeaders, isKeyPath } from '../http/headers.js'
import { countPublic, finish, restError, type Finish } from '../http/hot/answer.js'
import type { HotHandler } from '../http/hot/exchange.js'
import { requestIdOf } from '../http/middleware/observability.js'
import type { ResponseCache } from '../http/response-cache.js'
import { inputOf, readsData, runRoute } from './mount.js'
import { pathParamNames, type RestRoute } from './route.js'

// The REST shim's GET routes without Hono and without a Web Request (docs/adr/0004-hot-path.md):
// the route is matched here, its parameters parsed by its own declarations (inputOf), and its
// fixed document run by the same function as the mounted route (runRoute: Yoga's
// getResultForParams, whose parse and validation caches hold the document after the first call).
// The answer gets what the routes' middleware would add (src/http/hot/answer.ts). Public routes
// with the response cache on, key management, and any path Hono would decode are left to the routes.

interface Entry {
  route: RestRoute
  pattern: RegExp
  names: string[]
  /** Hono's routePath of the mounted route (the log line's and metrics' label). */
  routePath: string
}

export function hotRest({
  config,
  yoga,
  limits,
  cache,
  routes,
  freshness,
}: {
  config: Pick<Config, 'cors' | 'trustProxyHops' | 'ipv6Prefix' | 'requests'>
  yoga: Yoga
  limits: RateLimits
  cache: ResponseCache
  routes: RestRoute[]
  /** The times of Data-As-Of (decisions §10), as on the mounted routes. */
  freshness?: Freshness
}): HotHandler {
  // In the mounting order: the first route that matches answers, as in Hono.
  const table: Entry[] = []
  for (const route of routes) {
    const routePath = `/v1${route.path}`
    if (route.method !== 'GET' || isKeyPath(routePath)) continue
    const source = routePath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '([^/]+)')
    table.push({ route, pattern: new RegExp(`^${source}$`), names: pathParamNames(route.path), routePath })
  }
  const shared = (route: RestRoute) => route.cache?.scope === 'public' && cache.enabled

  return (x) => {
    if (x.method !== 'GET' || !x.target.startsWith('/v1/')) return undefined
    const q = x.target.indexOf('?')
    const path = q === -1 ? x.target : x.target.slice(0, q)
    // Percent-encoded paths are decoded by Hono's own rules; fragments never reach a server.
    if (path.includes('%') || x.target.includes('#')) return undefined
    let entry: Entry | undefined
    let match: RegExpExecArray | null = null
    for (const e of table) {
      match = e.pattern.exec(path)
      if (match) {
        entry = e
        break
      }
    }
    if (!entry || !match || shared(entry.route)) return undefined
    const { route, names, routePath } = entry
    const values = match
    return (async () => {
      const started = performance.now()
      const count = await countPublic(x, limits, config)
      if ('counted' in count) return count
      const { rateLimit } = count
      const requestId = requestIdOf(x.header('x-request-id'))
      const deadline = Deadline.in(config.requests.timeoutMs, x.client)
      const f: Finish = { config, exchange: x, path, route: routePath, requestId, started, keyManagement: false, rateLimit, deadline }
      try {
        const pathParams: Record<string, string> = {}
        for (let i = 0; i < names.length; i++) pathParams[names[i]!] = values[i + 1]!
        const input = inputOf(route, pathParams, getQueryParams(x.url) as Record<string, string[]>, {})
        const answer = await runRoute(
          yoga,
          route,
          input,
          x.request,
          { requestId, deadline, rest: true, client: x.clientId(config) },
          routePath,
          readsData(route) ? freshness : undefined,
        )
        if (!answer.cacheControl)
          return finish(f, 200, { 'content-type': answer.contentType, 'cache-control': 'no-store', ...dataAsOfHeaders(answer.dataAsOf, 200) }, answer.body)
        const current = notModified(x.header('if-none-match'), answer.etag!)
        const status = current ? 304 : 200
        return finish(
          f,
          status,
          { 'content-type': answer.contentType, etag: answer.etag!, 'cache-control': answer.cacheControl, ...dataAsOfHeaders(answer.dataAsOf, status) },
          current ? null : answer.body,
        )
      } catch (e) {
        return restError(f, e)
      } finally {
        deadline.end()
      }
    })()
  }
}
