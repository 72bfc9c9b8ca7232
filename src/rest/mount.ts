import type { ExecutionResult } from 'graphql'
import type { Context as HonoContext, Hono } from 'hono'
import { AppError, quoted } from '../core/errors.js'
import { logger } from '../core/log.js'
import type { RequestScope } from '../graphql/context.js'
import type { Yoga } from '../graphql/yoga.js'
import type { Freshness } from '../freshness/status.js'
import type { AppEnv } from '../http/env.js'
import { etagOf, notModified } from '../http/etag.js'
import { isKeyPath } from '../http/headers.js'
import { pathAndQuery, type CachedResponse, type ResponseCache } from '../http/response-cache.js'
import type { Params, ParsedParams } from './params.js'
import { pathParamNames, resultError, type RestRoute, type RouteInput } from './route.js'

// Mounts the REST shim's route table (src/rest/routes/index.ts) on Hono: each route's parameters
// are parsed by their declarations, its fixed GraphQL document runs through Yoga's own pipeline
// (same context factory, loaders, plugins, limits and error masking as /graphql), and its result
// is reshaped into the spec's JSON.

async function readBody(c: HonoContext<AppEnv>): Promise<Record<string, unknown>> {
  if (c.req.method !== 'POST') return {}
  // Spec §4: a JSON body, announced as such (an empty one too); a form or text body is refused unread.
  if (!/^application\/json\s*(;|$)/i.test(c.req.header('content-type') ?? '')) throw new AppError('bad_request', 'Content-Type must be application/json.')
  const text = await c.req.text()
  if (text.trim() === '') return {}
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new AppError('bad_request', 'The request body is not valid JSON.')
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('bad_request', 'The request body must be a JSON object.')
  return body as Record<string, unknown>
}

function parseParams<P extends Params>(declared: P, raw: Record<string, string | undefined>): ParsedParams<P> {
  const out: Record<string, unknown> = {}
  for (const [name, param] of Object.entries(declared)) out[name] = param.parse(raw[name], name)
  return out as ParsedParams<P>
}

async function routeInput(c: HonoContext<AppEnv>, route: RestRoute): Promise<RouteInput> {
  const all = c.req.queries()
  const query: Record<string, string | undefined> = {}
  for (const [k, v] of Object.entries(all)) {
    if (v.length > 1) throw new AppError('bad_request', `Query parameter ${quoted(k)} is given more than once.`)
    query[k] = v[0]
  }
  return { params: parseParams(route.params, c.req.param()), query: parseParams(route.query, query), body: await readBody(c) }
}

/** A public answer: its ETag, a shared-cache lifetime, and 304 when the client has it already. */
function publicAnswer(c: HonoContext<AppEnv>, r: CachedResponse) {
  if (r.dataAsOf !== undefined) c.set('dataAsOf', r.dataAsOf)
  c.header('Content-Type', r.contentType)
  c.header('ETag', r.etag!)
  c.header('Cache-Control', r.cacheControl!)
  return notModified(c.req.header('if-none-match'), r.etag!) ? c.body(null, 304) : c.body(r.body, 200)
}

/**
 * `responseCache`: where public GET routes keep their answers (see src/http/response-cache.ts).
 * `freshness`: the times a read's Data-As-Of header and its body's `as_of` values are taken from.
 */
export function mountRoutes(app: Hono<AppEnv>, yoga: Yoga, routes: RestRoute[], responseCache?: ResponseCache, freshness?: Freshness) {
  for (const route of routes) {
    const declared = Object.keys(route.params).sort().join(',')
    if (pathParamNames(route.path).sort().join(',') !== declared)
      throw new Error(`REST route ${route.method} ${route.path} declares path parameters [${declared}]`)
    const shared = route.cache?.scope === 'public' && route.method === 'GET' ? responseCache : undefined
    const cacheControl = route.cache && `${route.cache.scope}, max-age=${route.cache.maxAgeSeconds}`
    // Reads carry Data-As-Of (decisions §10); key management is not vault data.
    const reads = route.method === 'GET' && !isKeyPath(`/v1${route.path}`) ? freshness : undefined

    /** Runs the route's document; throws the AppError REST answers with. `request`/`scope`: what Yoga's context is made from. */
    const compute = async (c: HonoContext<AppEnv>, request: Request, scope: RequestScope): Promise<CachedResponse> => {
      const input = await routeInput(c, route)
      const variables = route.variables(input)
      // Taken before the document runs: the data it reads is at least this new.
      const dataTimes = reads && (await reads.current())
      const result = (await yoga.getResultForParams(
        { params: { query: route.document, variables }, request },
        dataTimes ? { ...scope, dataTimes } : scope,
      )) as ExecutionResult
      const error = resultError(result)
      if (error) throw error
      const body = JSON.stringify(route.shape(result.data, input))
      return {
        body,
        contentType: 'application/json; charset=utf-8',
        etag: cacheControl && etagOf(body),
        cacheControl,
        route: c.req.routePath,
        dataAsOf: dataTimes ? (dataTimes.dataAsOf?.toISOString() ?? null) : undefined,
      }
    }
    const own = (c: HonoContext<AppEnv>) => compute(c, c.req.raw, { requestId: c.get('requestId'), deadline: c.get('deadline'), rest: true })

    app.on(route.method, route.path, async (c) => {
      if (shared?.enabled) {
        // This caller's own failure (a 400, a 404): never shared, never stored.
        let failure: unknown
        const answer = await shared.load(`GET ${pathAndQuery(c.req.url)}`, (background) => {
          // A refresh of a stale answer, which this caller already has: it may outlive this
          // request, so it runs on a detached copy (a deadline of its own, no client signal) and
          // reads only the path and query from `c`. Its failure is nobody's to answer: dropped,
          // never stored (unexpected ones are logged).
          if (background) {
            const detached = new Request(c.req.url, { headers: c.req.raw.headers })
            const deadline = c.get('deadline')?.detached()
            return compute(c, detached, { requestId: c.get('requestId'), deadline, rest: true })
              .catch((e: unknown) => {
                if (!(e instanceof AppError)) logger.error({ err: e, path: c.req.path }, 'background refresh of a cached answer failed')
                return undefined
              })
              .finally(() => deadline?.end())
          }
          return own(c).catch((e: unknown) => {
            failure = e
            return undefined
          })
        })
        if (failure !== undefined) throw failure
        if (answer) return publicAnswer(c, answer)
      }
      const answer = await own(c)
      if (answer.dataAsOf !== undefined) c.set('dataAsOf', answer.dataAsOf)
      if (!answer.cacheControl) {
        c.header('Content-Type', answer.contentType)
        c.header('Cache-Control', 'no-store')
        return c.body(answer.body, 200)
      }
      return publicAnswer(c, answer)
    })
  }
}
