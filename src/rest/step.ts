import type { ExecutionResult } from 'graphql'
import { RegExpRouter } from 'hono/router/reg-exp-router'
import { getQueryParams, tryDecodeURIComponent } from 'hono/utils/url'
import { AppError, quoted } from '../core/errors.js'
import { logger } from '../core/log.js'
import { beginRead } from '../freshness/answer.js'
import type { Freshness } from '../freshness/status.js'
import type { RequestScope } from '../graphql/context.js'
import type { Yoga } from '../graphql/yoga.js'
import { etagOf } from '../http/etag.js'
import { isKeyPath } from '../http/headers.js'
import { parseJsonObject } from '../http/json-body.js'
import type { Answer } from '../http/pipeline/answer.js'
import { publicAnswer } from '../http/pipeline/public-answer.js'
import type { Exchange } from '../http/pipeline/exchange.js'
import type { CachedResponse, ResponseCache } from '../http/response-cache.js'
import type { Params, ParsedParams } from './params.js'
import { pathParamNames, resultError, type RestRoute, type RouteInput } from './route.js'

// The REST shim's `/v1` routes as one step of the request pipeline (docs/adr/0005-one-pipeline.md):
// the route table (src/rest/routes/index.ts) is matched by Hono's own RegExpRouter, so a path
// matches here exactly as it would in Hono; each route's parameters are parsed by their
// declarations, its fixed GraphQL document runs through Yoga's `getResultForParams` (same context
// factory, loaders, plugins, limits and error masking as /graphql), and its result is reshaped
// into the spec's JSON. Public GET routes keep their answers in the response cache.

interface Entry {
  route: RestRoute
  /** Hono's routePath of the route (the log line's and metrics' label). */
  routePath: string
  /** Whether the answer is vault or wallet data, carrying Data-As-Of (decisions §10). */
  reads: boolean
  shared: boolean
}

/** Spec §4: a JSON body, announced as such; "the body may be empty". */
async function readBody(x: Exchange): Promise<Record<string, unknown>> {
  // A form or text body is refused (unread when its length is announced). No body needs no
  // Content-Type, so a POST with nothing but its Authorization header reaches the caller check.
  if (!/^application\/json\s*(;|$)/i.test(x.header('content-type') ?? '')) {
    if (!x.hasBody) return {}
    if (x.header('content-length') !== undefined || (await x.text()) !== '') throw new AppError('bad_request', 'Content-Type must be application/json.')
    return {}
  }
  const text = await x.text()
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

export interface RestStep {
  yoga: Yoga
  routes: RestRoute[]
  cache: ResponseCache
  freshness?: Freshness
  who: Parameters<Exchange['clientId']>[0]
  /** The client's public count (taken by `admit`): throws the refusal when it is over its limit. */
  admitted: (x: Exchange) => Promise<void>
}

/**
 * The `/v1` step: `answer` takes a request of one of the routes (HEAD as GET, as Hono does);
 * `routes` lists them for the documentation checks.
 */
export function restStep({ yoga, routes, cache, freshness, who, admitted }: RestStep) {
  const router = new RegExpRouter<Entry>()
  const listed: { method: string; path: string }[] = []
  for (const route of routes) {
    const declared = Object.keys(route.params).sort().join(',')
    if (pathParamNames(route.path).sort().join(',') !== declared)
      throw new Error(`REST route ${route.method} ${route.path} declares path parameters [${declared}]`)
    const routePath = `/v1${route.path}`
    router.add(route.method, routePath, { route, routePath, reads: readsData(route), shared: route.cache?.scope === 'public' && route.method === 'GET' })
    listed.push({ method: route.method, path: routePath })
  }

  function match(x: Exchange): { entry: Entry; params: Record<string, string> } | undefined {
    const [handlers, stash] = router.match(x.method === 'HEAD' ? 'GET' : x.method, x.path) as [[Entry, Record<string, number>][], string[]]
    const first = handlers[0]
    if (!first) return undefined
    const params: Record<string, string> = {}
    for (const name in first[1]) {
      const value = stash[first[1][name]!]
      if (value !== undefined) params[name] = tryDecodeURIComponent(value)
    }
    return { entry: first[0], params }
  }

  async function run(x: Exchange, { entry, params }: NonNullable<ReturnType<typeof match>>): Promise<Answer> {
    x.route = entry.routePath
    await admitted(x)
    const { route } = entry
    const reads = entry.reads ? freshness : undefined
    const scope = (): RequestScope => ({ requestId: x.requestId, deadline: x.deadline, rest: true, client: x.clientId(who) })
    // Parameters first, then the body (a bad parameter is answered without reading it).
    const input = async () => {
      const partial = inputOf(route, params, getQueryParams(x.url) as Record<string, string[]>, {})
      return route.method === 'POST' ? { ...partial, body: await readBody(x) } : partial
    }
    const own = async () => runRoute(yoga, route, await input(), x.request, scope(), entry.routePath, reads)
    if (entry.shared && cache.enabled) {
      // This caller's own failure (a 400, a 404): never shared, never stored.
      let failure: unknown
      const shared = await cache.load(`GET ${x.target}`, (background) => {
        // A refresh of a stale answer, which this caller already has: it may outlive this
        // request, so it runs on a detached request (a deadline of its own, no client signal).
        // Its failure is nobody's to answer: dropped, never stored (unexpected ones are logged).
        if (background) {
          const detached = new Request(x.url)
          const deadline = x.deadline?.detached()
          return input()
            .then((i) => runRoute(yoga, route, i, detached, { ...scope(), deadline }, entry.routePath, reads))
            .catch((e: unknown) => {
              if (!(e instanceof AppError)) logger.error({ err: e, path: x.path }, 'background refresh of a cached answer failed')
              return undefined
            })
            .finally(() => deadline?.end())
        }
        return own().catch((e: unknown) => {
          failure = e
          return undefined
        })
      })
      if (failure !== undefined) throw failure
      if (shared) return publicAnswer(x, shared)
    }
    const r = await own()
    if (!r.cacheControl) {
      if (r.dataAsOf !== undefined) x.dataAsOf = r.dataAsOf
      return { status: 200, headers: { 'content-type': r.contentType, 'cache-control': 'no-store' }, body: x.method === 'HEAD' ? null : r.body }
    }
    return publicAnswer(x, r)
  }

  /** The answer to a request of one of the routes; undefined for any other. */
  const answer = (x: Exchange): Promise<Answer> | undefined => {
    const m = match(x)
    return m && run(x, m)
  }

  return { answer, routes: listed }
}
