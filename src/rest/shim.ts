import { createHash } from 'node:crypto'
import type { ExecutionResult } from 'graphql'
import { Hono, type Context as HonoContext } from 'hono'
import type { Yoga } from '../app.js'
import { AppError, isErrorCode, type ErrorCode } from '../errors.js'
import type { AppEnv } from '../http/env.js'
import { pathAndQuery, type CachedResponse, type ResponseCache } from '../http/response-cache.js'

/**
 * One REST route of the shim: a fixed GraphQL document run through Yoga's own pipeline (same
 * context factory, loaders, plugins, limits and error masking as /graphql), its result reshaped
 * into the spec's snake_case JSON.
 */
export interface RestRoute<Data = any> {
  method: 'GET' | 'POST' | 'DELETE'
  /** Hono path under /v1, e.g. `/vaults/:vault_id`. */
  path: string
  document: string
  /** Builds the GraphQL variables from path and query parameters; throws AppError('bad_request') on bad input. */
  variables(input: RouteInput): Record<string, unknown>
  /** Reshapes `data` into the response body; throws AppError('not_found') when the resource is absent. */
  shape(data: Data, input: RouteInput): unknown
  /** `public` responses get an ETag and a short shared cache lifetime; the default is `no-store`. */
  cache?: { scope: 'public' | 'private'; maxAgeSeconds: number }
}

export interface RouteInput {
  params: Record<string, string>
  query: Record<string, string | undefined>
  /** Query parameters given more than once (a 400: never pick one silently). */
  repeated: string[]
  /** The JSON object body of a POST (`{}` when the body is empty). */
  body: Record<string, unknown>
}

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

async function routeInput(c: HonoContext<AppEnv>): Promise<RouteInput> {
  const all = c.req.queries()
  const query: Record<string, string | undefined> = {}
  const repeated: string[] = []
  for (const [k, v] of Object.entries(all)) {
    query[k] = v[0]
    if (v.length > 1) repeated.push(k)
  }
  return { params: c.req.param() as Record<string, string>, query, repeated, body: await readBody(c) }
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

/** A public answer: its ETag, a shared-cache lifetime, and 304 when the client has it already. */
function publicAnswer(c: HonoContext<AppEnv>, r: CachedResponse) {
  c.header('Content-Type', r.contentType)
  c.header('ETag', r.etag!)
  c.header('Cache-Control', r.cacheControl!)
  if (etagMatches(c.req.header('if-none-match'), r.etag!)) return c.body(null, 304)
  return c.body(r.body, 200)
}

/** `responseCache`: where public GET routes keep their answers (see src/http/response-cache.ts). */
export function mountRoutes(app: Hono<AppEnv>, yoga: Yoga, routes: RestRoute[], responseCache?: ResponseCache) {
  for (const route of routes) {
    const shared = route.cache?.scope === 'public' && route.method === 'GET' ? responseCache : undefined
    const cacheControl = route.cache && `${route.cache.scope}, max-age=${route.cache.maxAgeSeconds}`

    /** Runs the route's document; throws the AppError REST answers with. */
    const compute = async (c: HonoContext<AppEnv>): Promise<CachedResponse> => {
      const input = await routeInput(c)
      if (input.repeated.length > 0) throw new AppError('bad_request', `Query parameter ${input.repeated[0]} is given more than once.`)
      const variables = route.variables(input)
      const result = (await yoga.getResultForParams({ params: { query: route.document, variables }, request: c.req.raw }, {})) as ExecutionResult
      const error = resultError(result)
      if (error) throw error
      const body = JSON.stringify(route.shape(result.data, input))
      return { body, contentType: 'application/json; charset=utf-8', etag: cacheControl && etagOf(body), cacheControl }
    }

    app.on(route.method, route.path, async (c) => {
      if (shared?.enabled) {
        // This caller's own failure (a 400, a 404): never shared, never stored.
        let failure: unknown
        const answer = await shared.load(`GET ${pathAndQuery(c.req.url)}`, () =>
          compute(c).catch((e: unknown) => {
            failure = e
            return undefined
          }),
        )
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
