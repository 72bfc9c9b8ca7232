// createGraphQLError builds the error with Yoga's own graphql instance (a test runner may load a
// second copy of graphql, and Yoga only strips the internal `http` extension from its own errors).
import { createGraphQLError, createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga'
import { Hono } from 'hono'
import { resolveViewer } from './auth/viewer.js'
import { createSessionAuth } from './auth/session.js'
import { systemClock, type Clock } from './clock.js'
import type { Config } from './config.js'
import { createContext, type Context } from './context.js'
import { watchDataChanges } from './data-changes.js'
import type { Database } from './db.js'
import { AppError, isErrorCode, isGraphQLError, toAppError } from './errors.js'
import { adminRoutes } from './http/admin.js'
import type { AppEnv } from './http/env.js'
import { errorResponse } from './http/errors.js'
import { explorerRoutes } from './http/explorer.js'
import { graphiqlOptions, type ExampleIds } from './http/graphiql.js'
import { requestIdOf, requestObservability, useOperationMetrics } from './http/observability.js'
import { createFastPath } from './http/fast-path.js'
import { internalRoutes } from './http/internal.js'
import { referenceRoutes } from './http/reference.js'
import { cachedGraphql, ResponseCache } from './http/response-cache.js'
import { createApiKeyVerifier, type ApiKeyVerifier } from './keys/verifier.js'
import { logger } from './log.js'
import { cacheLookups, observePool, observeSql, registry } from './metrics.js'
import { restRoutes } from './rest/routes.js'
import { mountRoutes } from './rest/shim.js'
import { schema } from './schema/index.js'
import { protectionPlugins } from './graphql-protection.js'
import { answerError, answerWithin, explainNotAcceptable, limitBody, requestDeadline, shareDeadline } from './http/limits.js'
import { guardKeyManagement } from './http/key-guard.js'
import { createRateLimits, limitByClientIp, type RateLimits } from './http/rate-limit.js'
import { contentSecurityPolicy, corsFor, securityHeaders } from './http/security.js'

/**
 * Expected failures are AppErrors (GraphQLErrors with a code) and pass through; syntax and
 * validation errors become `bad_request`; anything else is logged and answered as `internal`
 * (or `unavailable` when the database is unreachable), never with its message or stack.
 */
export function maskError(error: unknown): Error {
  if (isGraphQLError(error)) {
    const original = error.originalError
    if (!original || isGraphQLError(original)) {
      if (isErrorCode(error.extensions.code)) return error
      return createGraphQLError(error.message, { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, extensions: { ...error.extensions, code: 'bad_request' } })
    }
    const app = toAppError(original)
    if (app.code === 'internal' || app.code === 'unavailable') logger.error({ err: original, path: error.path }, 'resolver failed')
    return createGraphQLError(app.message, { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, extensions: app.extensions })
  }
  const app = toAppError(error)
  logger.error({ err: error }, 'request failed')
  return app
}

/**
 * Validation errors get the `bad_request` code like every other client mistake, without graphql-js'
 * "Did you mean …?" suggestions (they reveal schema fields that introspection may hide).
 */
export const useValidationErrorCodes = (): Plugin => ({
  onValidate: () => ({ valid, result, setResult }) => {
    if (valid) return
    setResult(
      result.map(
        (e) =>
          createGraphQLError(e.message.replace(/ Did you mean .*\?$/, ''), {
            nodes: e.nodes,
            source: e.source,
            positions: e.positions,
            path: e.path,
            extensions: { ...e.extensions, code: 'bad_request', http: { status: 400 } },
          }),
      ),
    )
  },
})

export type Yoga = YogaServerInstance<Record<string, never>, Context>

export interface App {
  /** `env` is the node-server bindings (the client's socket), absent for in-process requests. */
  fetch: (request: Request, env?: unknown) => Promise<Response>
  yoga: Yoga
  limits: RateLimits
  /** The API key verifier behind /internal/v1/apiKey/verify. */
  verifier: ApiKeyVerifier
  /** Public vault reads kept in memory (see src/http/response-cache.ts). */
  responseCache: ResponseCache
  /** Resolves once background connections (the key-change and data-change LISTENs) are up or have failed once. */
  ready: Promise<void>
  /** Every route the app serves (method and Hono path), for the documentation checks. */
  routes: { method: string; path: string }[]
  /** From now on /readyz answers 503 (the process is shutting down; load balancers take it out). */
  drain(): void
  /** Stops background work (not the database: its owner closes it). */
  close(): Promise<void>
}

/**
 * `clock`: injectable time (tests) for each request's `now`, key expiry, key-cache age and session tokens.
 * `examples`: ids for GraphiQL's example operations (the demo data's, when it is loaded; may arrive after start).
 */
export function createApp({
  config,
  db,
  clock = systemClock,
  examples,
  fastPath = true,
}: {
  config: Config
  db: Database
  clock?: Clock
  examples?: ExampleIds | Promise<ExampleIds | undefined>
  /** Answer cache hits and key verifications before the routes (src/http/fast-path.ts); off only to compare both paths in tests. */
  fastPath?: boolean
}): App {
  const session = createSessionAuth(config.auth, clock)
  // Rate-limit counters (in Redis when REDIS_URL is set): see the hardening block below.
  const limits = createRateLimits(config)
  // On PostgreSQL, other instances' revocations arrive by NOTIFY on a dedicated connection.
  const verifier = createApiKeyVerifier({
    prisma: db.prisma,
    clock,
    cacheTtlMs: config.apiKeyCacheTtlMs,
    listen: db.pool ? { ...db.pool.options } : undefined,
    onCacheLookup: (hit) => cacheLookups.inc({ cache: 'api_key', result: hit ? 'hit' : 'miss' }),
  })
  const yoga: Yoga = createYoga<Record<string, never>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    context: ({ request }) => guardKeyManagement(createContext({ request, now: clock(), clock, authenticate: (r) => resolveViewer(r, session) }), { limits, config }),
    maskedErrors: { maskError },
    graphiql: config.graphql.graphiql ? async () => graphiqlOptions(await examples) : false,
    // The bundled GraphiQL: the default one loads its scripts from a CDN, which offline machines lack.
    // Loaded on first use: its bundle holds ~30 MB of heap that production (no GraphiQL) never needs.
    renderGraphiQL: async (options) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(options),
    landingPage: false,
    logging: false,
    // CORS is answered by Hono (corsFor): Yoga's default would reflect any origin.
    cors: false,
    plugins: [useValidationErrorCodes(), useOperationMetrics(), ...protectionPlugins(config)],
  })

  const app = new Hono<AppEnv>()
  app.use('*', async (c, next) => {
    const requestId = requestIdOf(c.req.header('x-request-id'))
    c.set('requestId', requestId)
    await next()
    // On the finished response's headers: c.header() at this point would rebuild the response
    // around a stream (Hono), which costs more than the rest of a cached answer.
    try {
      c.res.headers.set('X-Request-Id', requestId)
    } catch {
      c.header('X-Request-Id', requestId) // a response with immutable headers
    }
  })
  app.use('*', requestObservability)

  // Hardening (README "Under faults and abuse"): security headers and CORS; on the public routes a
  // body size limit, a per-client-IP rate limit and a deadline per request.
  app.use('*', securityHeaders, contentSecurityPolicy)
  app.use('/graphql', explainNotAcceptable)
  app.use('/readyz', answerWithin(config.pool.connectTimeoutMs, 'The database is unavailable; try again shortly.'))
  for (const path of ['/graphql', '/v1/*']) {
    app.use(path, corsFor(config), limitBody(config.requests.bodyLimitBytes), limitByClientIp(limits, config.trustProxyHops), requestDeadline(config.requests.timeoutMs))
  }
  observePool(db.pool)
  // SQL text is parameterised (no values), so slow statements can be logged as they are.
  const stopSqlObservation = observeSql((sql, ms) => logger.warn({ ms: Math.round(ms), sql: sql.slice(0, 500) }, 'slow SQL statement'), config.slowQueryMs)

  app.get('/healthz', (c) => c.json({ status: 'ok', server_time_ms: Date.now() }))
  app.get('/metrics', async (c) => c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType }))
  let draining = false
  app.get('/readyz', async (c) => {
    if (draining) return errorResponse(c, new AppError('unavailable', 'The gateway is shutting down.'))
    await db.ping()
    return c.json({ status: 'ok', data: { storage: db.mode, migrations: 'applied' }, server_time_ms: Date.now() })
  })
  // Off until the change feed listens: an import elsewhere must never leave stale answers here.
  const responseCache = new ResponseCache(config.responseCache.ttlMs, config.responseCache.maxBytes, Date.now, config.responseCache.staleMs)
  responseCache.setLive(false)
  const dataFeed =
    config.responseCache.ttlMs > 0
      ? watchDataChanges(db, { onChange: () => responseCache.clear(), onLive: (live) => responseCache.setLive(live) })
      : { ready: Promise.resolve(), stop: async () => {} }

  app.post(
    '/graphql',
    cachedGraphql(responseCache, schema, (request, original) => {
      shareDeadline(original, request)
      return Promise.resolve(yoga.fetch(request, {}))
    }),
  )
  app.on(['GET', 'POST', 'OPTIONS'], '/graphql', (c) => yoga.fetch(c.req.raw, {}))
  app.route('/admin', adminRoutes(config, { clock, onDataChanged: () => responseCache.clear() }))
  app.route('/internal', internalRoutes(config, verifier, limits))
  const v1 = new Hono<AppEnv>()
  mountRoutes(v1, yoga, restRoutes, responseCache)
  app.route('/v1', v1)
  // Integrator surfaces: the OpenAPI document, the browsable reference and the vault explorer.
  app.route('/', referenceRoutes())
  app.route('/', explorerRoutes())

  app.notFound((c) => errorResponse(c, new AppError('not_found', `No route for ${c.req.method} ${c.req.path}.`)))
  app.onError(answerError)

  const routes = app.routes.filter((r) => r.method !== 'ALL').map(({ method, path }) => ({ method, path }))
  const viaRoutes = (request: Request, env: unknown) => Promise.resolve(app.fetch(request, env as never))
  const fast = fastPath ? createFastPath({ config, cache: responseCache, limits, verifier }, viaRoutes) : () => undefined
  return {
    fetch: (request, env) => fast(request, env) ?? viaRoutes(request, env),
    yoga,
    limits,
    verifier,
    responseCache,
    ready: Promise.all([verifier.ready, dataFeed.ready]).then(() => {}),
    routes,
    drain: () => {
      draining = true
    },
    close: async () => {
      stopSqlObservation()
      limits.close()
      await Promise.all([verifier.close(), dataFeed.stop()])
    },
  }
}
