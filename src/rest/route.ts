import { createHash } from 'node:crypto'
import type { ExecutionResult } from 'graphql'
import { Hono, type Context as HonoContext } from 'hono'
import type { z } from 'zod'
import type { Yoga } from '../app.js'
import { AppError, isErrorCode, type ErrorCode } from '../core/errors.js'
import type { AppEnv } from '../http/env.js'
import { withOwnDeadline } from '../http/middleware/limits.js'
import { pathAndQuery, type CachedResponse, type ResponseCache } from '../http/response-cache.js'
import { logger } from '../core/log.js'
import { cacheLookups } from '../core/metrics.js'
import type { Params, ParsedParams } from './params.js'

/** Security schemes of the OpenAPI document (src/openapi/document.ts defines them). */
export type SecurityScheme = 'walletSession' | 'adminToken' | 'internalToken'

/** An error a route documents: a code at its usual status, or at another one. */
export type ErrorDoc = ErrorCode | { code: ErrorCode; status: number }

/** What the OpenAPI document says about a route, beside what the route does. */
export interface RouteDoc {
  /** One line; the reference's operation title. */
  summary: string
  description?: string
  tags: string[]
  /** The errors this route answers with besides `internal` (500) and `unavailable` (503), which any route may. */
  errors: ErrorDoc[]
  security?: SecurityScheme[]
  /** Request headers that change the answer (documented only; routes read them from the request). */
  headers?: Params
}

/**
 * One REST route of the shim: a fixed GraphQL document run through Yoga's own pipeline (same
 * context factory, loaders, plugins, limits and error masking as /graphql), its result reshaped
 * into the spec's snake_case JSON. Its parameters and response are declared once: the shim parses
 * the parameters with them, and the OpenAPI document is generated from them.
 */
export interface RestRoute<Data = any, P extends Params = Params, Q extends Params = Params, R extends z.ZodType = z.ZodType> extends RouteDoc {
  method: 'GET' | 'POST' | 'DELETE'
  /** Hono path under /v1, e.g. `/vaults/:vault_id`. */
  path: string
  document: string
  /** Every `:name` segment of `path` (checked when the route is mounted). */
  params: P
  /** The query parameters the route reads; others are ignored (routes never see them). */
  query: Q
  /** The documented JSON body of a POST (the route validates `input.body` itself). */
  body?: z.ZodType
  /** The body of a 200 answer. */
  response: R
  /** Builds the GraphQL variables from the parsed parameters; throws AppError('bad_request') on bad input. */
  variables(input: RouteInput<P, Q>): Record<string, unknown>
  /** Reshapes `data` into the response body; throws AppError('not_found') when the resource is absent. */
  shape(data: Data, input: RouteInput<P, Q>): z.input<R>
  /** `public` responses get an ETag and a short shared cache lifetime; the default is `no-store`. */
  cache?: { scope: 'public' | 'private'; maxAgeSeconds: number }
}

/** Infers a route's parameter, data and response types (the route table holds them erased). */
export function defineRoute<Data, P extends Params, Q extends Params, R extends z.ZodType>(route: RestRoute<Data, P, Q, R>): RestRoute {
  return route as unknown as RestRoute
}

export interface RouteInput<P extends Params = Params, Q extends Params = Params> {
  /** Path parameters, parsed by their declarations. */
  params: ParsedParams<P>
  /** Declared query parameters, parsed (absent ones hold their default or undefined). */
  query: ParsedParams<Q>
  /** The JSON object body of a POST (`{}` when the body is empty). */
  body: Record<string, unknown>
}

/** The `:name` segments of a Hono path. */
export const pathParamNames = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!)

/** The GraphQL result's first error as the AppError REST answers with. */
export function resultError(result: ExecutionResult): AppError | undefined {
  const first = result.errors?.[0]
  if (!first) return undefined
  const code = first.extensions?.code as ErrorCode | undefined
  const http = first.extensions?.http as { status?: number; headers?: Record<string, string> } | undefined
  if (isErrorCode(code)) return new AppError(code, first.message, { status: http?.status, headers: http?.headers })
  return new AppError('internal', 'Internal server error.')
}

async function readBody(c: HonoContext<AppEnv>): Promise<Record<string, unknown>> {
  if (c.req.method !== 'POST') return {}
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
    if (v.length > 1) throw new AppError('bad_request', `Query parameter ${k} is given more than once.`)
    query[k] = v[0]
  }
  return { params: parseParams(route.params, c.req.param()), query: parseParams(route.query, query), body: await readBody(c) }
}

export function etagOf(body: string): string {
  return `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
}

/** True when an If-None-Match header lists this ETag (or `*`). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false
  return header.split(',').some((t) => {
    const tag = t.trim()
    return tag === '*' || tag === etag || tag.replace(/^W\//, '') === etag.replace(/^W\//, '')
  })
}

/** 304 when the client's copy (If-None-Match) is current: a revalidation, counted as an ETag hit or miss. */
export function notModified(ifNoneMatch: string | null | undefined, etag: string): boolean {
  if (ifNoneMatch == null) return false
  const hit = etagMatches(ifNoneMatch, etag)
  cacheLookups.inc({ cache: 'rest_etag', result: hit ? 'hit' : 'miss' })
  return hit
}

/** A public answer: its ETag, a shared-cache lifetime, and 304 when the client has it already. */
function publicAnswer(c: HonoContext<AppEnv>, r: CachedResponse) {
  c.header('Content-Type', r.contentType)
  c.header('ETag', r.etag!)
  c.header('Cache-Control', r.cacheControl!)
  return notModified(c.req.header('if-none-match'), r.etag!) ? c.body(null, 304) : c.body(r.body, 200)
}

/** `responseCache`: where public GET routes keep their answers (see src/http/response-cache.ts). */
export function mountRoutes(app: Hono<AppEnv>, yoga: Yoga, routes: RestRoute[], responseCache?: ResponseCache) {
  for (const route of routes) {
    const declared = Object.keys(route.params).sort().join(',')
    if (pathParamNames(route.path).sort().join(',') !== declared) throw new Error(`REST route ${route.method} ${route.path} declares path parameters [${declared}]`)
    const shared = route.cache?.scope === 'public' && route.method === 'GET' ? responseCache : undefined
    const cacheControl = route.cache && `${route.cache.scope}, max-age=${route.cache.maxAgeSeconds}`

    /**
     * Runs the route's document; throws the AppError REST answers with. `request`: what Yoga's
     * context is made from (its deadline and signal), `c`'s own request unless detached from it.
     */
    const compute = async (c: HonoContext<AppEnv>, request = c.req.raw): Promise<CachedResponse> => {
      const input = await routeInput(c, route)
      const variables = route.variables(input)
      const result = (await yoga.getResultForParams({ params: { query: route.document, variables }, request }, {})) as ExecutionResult
      const error = resultError(result)
      if (error) throw error
      const body = JSON.stringify(route.shape(result.data, input))
      return { body, contentType: 'application/json; charset=utf-8', etag: cacheControl && etagOf(body), cacheControl, route: c.req.routePath }
    }

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
            return withOwnDeadline(c.req.raw, detached, () => compute(c, detached)).catch((e: unknown) => {
              if (!(e instanceof AppError)) logger.error({ err: e, path: c.req.path }, 'background refresh of a cached answer failed')
              return undefined
            })
          }
          return compute(c).catch((e: unknown) => {
            failure = e
            return undefined
          })
        })
        if (failure !== undefined) throw failure
        if (answer) return publicAnswer(c, answer)
      }
      const answer = await compute(c)
      if (!answer.cacheControl) {
        c.header('Content-Type', answer.contentType)
        c.header('Cache-Control', 'no-store')
        return c.body(answer.body, 200)
      }
      return publicAnswer(c, answer)
    })
  }
}
