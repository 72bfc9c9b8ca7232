import type { ExecutionResult } from 'graphql'
import type { Context as HonoContext, Hono } from 'hono'
import { AppError, quoted } from '../core/errors.js'
import { logger } from '../core/log.js'
import type { RequestScope } from '../graphql/context.js'
import type { Yoga } from '../graphql/yoga.js'
import { beginRead } from '../freshness/answer.js'
import type { Freshness } from '../freshness/status.js'
import type { AppEnv } from '../http/env.js'
import { parseJsonObject } from '../http/json-body.js'
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
  // Spec §4: a JSON body, announced as such; a form or text body is refused (unread when its
  // length is announced). "The body may be empty": no body needs no Content-Type, so a POST with
  // nothing but its Authorization header reaches the caller check (401 without a token).
  if (!/^application\/json\s*(;|$)/i.test(c.req.header('content-type') ?? '')) {
    const length = c.req.header('content-length')
    if (c.req.raw.body === null || length === '0') return {}
    if (length !== undefined || (await c.req.text()) !== '') throw new AppError('bad_request', 'Content-Type must be application/json.')
    return {}
  }
  const text = await c.req.text()
  if (text.trim() === '') return {}
  return parseJsonObject(text)
}

function parseParams<P extends Params>(declared: P, raw: Record<string, string | undefined>): ParsedParams<P> {
  const out: Record<string, unknown> = {}
  for (const [name, param] of Object.entries(declared)) out[name] = param.parse(raw[name], name)
  return out as ParsedParams<P>
}

/** A route's input from its path parameters, its query (every value of each name) and its body. */
export function inputOf(route: RestRoute, pathParams: Record<string, string>, queries: Record<string, string[]>, body: Record<string, unknown>): RouteInput {
  const query: Record<string, string | undefined> = {}
  for (const [k, v] of Object.entries(queries)) {
    if (v.length > 1) throw new AppError('bad_request', `Query parameter ${quoted(k)} is given more than once.`)
    query[k] = v[0]
  }
  return { params: parseParams(route.params, pathParams), query: parseParams(route.query, query), body }
}

async function routeInput(c: HonoContext<AppEnv>, route: RestRoute): Promise<RouteInput> {
  // Parameters first, then the body (a bad parameter is answered without reading it).
  const pathParams = c.req.param() as Record<string, string>
  const queries = c.req.queries()
  const partial = inputOf(route, pathParams, queries, {})
  return route.method === 'POST' ? { ...partial, body: await readBody(c) } : partial
}

/** Whether a route's answer is vault or wallet data, carrying Data-As-Of (decisions §10): GET routes other than key management. */
export const readsData = (route: RestRoute) => route.method === 'GET' && !isKeyPath(`/v1${route.path}`)

/**
 * What a route answers with a 200 (`cacheControl` only on `cache`d routes), after running its
 * document. `reads`: for a read, the freshness times, taken before the document runs (the data it
 * reads is at least this new; a failure to read them fails the route), go into its context, and
 * the answer's `dataAsOf` is that of the data it read (src/freshness/answer.ts).
 */
export async function runRoute(
  yoga: Yoga,
  route: RestRoute,
  input: RouteInput,
  request: Request,
  scope: RequestScope,
  routePath: string,
  reads?: Freshness,
): Promise<CachedResponse> {
  const cacheControl = route.cache && `${route.cache.scope}, max-age=${route.cache.maxAgeSeconds}`
  const variables = route.variables(input)
  const data = await beginRead(reads)
  const result = (await yoga.getResultForParams(
    { params: { query: route.document, variables }, request },
    data ? { ...scope, data } : scope,
  )) as ExecutionResult
  const error = resultError(result)
  if (error) throw error
  const body = JSON.stringify(route.shape(result.data, input))
  return {
    body,
    contentType: 'application/json; charset=utf-8',
    etag: cacheControl && etagOf(body),
    cacheControl,
    route: routePath,
    dataAsOf: data?.header,
  }
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
    // Reads carry Data-As-Of (decisions §10); key management is not vault data.
    const reads = readsData(route) ? freshness : undefined

    /** Runs the route's document; throws the AppError REST answers with. `request`/`scope`: what Yoga's context is made from. */
    const compute = async (c: HonoContext<AppEnv>, request: Request, scope: RequestScope): Promise<CachedResponse> =>
      runRoute(yoga, route, await routeInput(c, route), request, scope, c.req.routePath, reads)
    const own = (c: HonoContext<AppEnv>) =>
      compute(c, c.req.raw, { requestId: c.get('requestId'), deadline: c.get('deadline'), rest: true, client: c.get('client') })

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
            return compute(c, detached, { requestId: c.get('requestId'), deadline, rest: true, client: c.get('client') })
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
