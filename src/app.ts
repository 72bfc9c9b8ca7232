import { Hono } from 'hono'
import type { Config } from './config.js'
import { systemClock, type Clock } from './core/clock.js'
import { AppError, quoted } from './core/errors.js'
import { logger, useLogLevel } from './core/log.js'
import { cacheLookups, observeDataAge, observePool, registry, useRequestTimeout } from './core/metrics.js'
import { createRateLimits, type RateLimits } from './core/rate-limit.js'
import { type Database, observeSql } from './db/client.js'
import { createFreshness, type Freshness } from './freshness/status.js'
import type { ExampleIds } from './graphql/examples.js'
import { operationClassifier } from './graphql/public-operations.js'
import { schema } from './graphql/schema/index.js'
import { createGatewayYoga, type Yoga } from './graphql/yoga.js'
import { compressAnswer, withCompression } from './http/compression.js'
import { earlyAnswers } from './http/early-answers.js'
import type { AppEnv } from './http/env.js'
import { answerError, errorResponse } from './http/errors.js'
import { firstHot, isAnswer, requestExchange, type Answer, type HandBack, type HotHandler } from './http/hot/exchange.js'
import { hotGraphql } from './http/hot/graphql.js'
import { corsPreflight, responseHeaders } from './http/headers.js'
import { answerWithin, classifyRefusedGraphql, explainNotAcceptable, limitBody, requestDeadline } from './http/middleware/limits.js'
import { bearerMatches } from './http/middleware/bearer.js'
import { requestStart } from './http/middleware/observability.js'
import { limitByClientIp } from './http/middleware/rate-limit.js'
import { cachedGraphql, operationData, ResponseCache } from './http/response-cache.js'
import { adminRoutes } from './http/routes/admin.js'
import { explorerRoutes } from './http/routes/explorer.js'
import { graphiqlRoutes } from './http/routes/graphiql.js'
import { internalRoutes } from './http/routes/internal.js'
import { referenceRoutes } from './http/routes/reference.js'
import { watchDataChanges } from './importer/changes.js'
import { eventStreams } from './http/middleware/event-streams.js'
import { flushUsageThrough } from './keys/store.js'
import { createUsageRecorder, pruneUsage, type UsageRecorder } from './keys/usage.js'
import { createApiKeyVerifier, type ApiKeyVerifier } from './keys/verifier.js'
import { hotRest } from './rest/hot.js'
import { createLiveHub } from './live/hub.js'
import { mountRoutes } from './rest/mount.js'
import { restRoutes } from './rest/routes/index.js'
import type { SourcesConfig } from './sources/config.js'
import { startSourceFollower, type SourceFollower } from './sources/follower.js'
import { sourcesStatus, type SourceStatus } from './sources/status.js'
import { createSecretBox } from './webhooks/secrets.js'
import { createWebhookService, type WebhookService } from './webhooks/service.js'
import { feedWakeups } from './webhooks/wakeups.js'
import { createWebhookWorker, type WebhookWorker } from './webhooks/worker.js'

// The composition root: the services of one gateway process wired together, and the HTTP routes
// in the order a request meets them.

export interface App {
  /** `env` is the node-server bindings (the client's socket), absent for in-process requests. */
  fetch: (request: Request, env?: unknown) => Promise<Response>
  /** POST /graphql and the REST reads answered without Hono (src/http/hot/); undefined with HOT_PATH=false; the server writes them from node:http unless HOT_PATH=fetch. */
  hot?: HotHandler
  config: Config
  /** `fetch` without the hot routes: the node:http listener (src/http/hot/node.ts) answers those itself. */
  fetchGeneral: (request: Request, env?: unknown) => Promise<Response>
  yoga: Yoga
  limits: RateLimits
  /** The API key verifier behind /internal/v1/apiKey/verify. */
  verifier: ApiKeyVerifier
  /** Verification counts and last-use times of keys, written in batches (src/keys/usage.ts); and the 90-day retention job. */
  keyUsage: UsageRecorder & { prune(): Promise<number> }
  /** Public vault reads kept in memory (see src/http/response-cache.ts). */
  responseCache: ResponseCache
  /** Resolves once background connections (the key-change and data-change LISTENs) are up or have failed once. */
  ready: Promise<void>
  /** Webhook endpoints, deliveries and replays (the admin routes' service). */
  webhooks: WebhookService
  /** The webhook delivery worker, running unless WEBHOOK_WORKER=false. */
  webhookWorker?: WebhookWorker
  /** The chain source's follower, when VAULT_SOURCES_FILE is set (it follows once this instance holds its lock). */
  sourceFollower?: SourceFollower
  /** The freshness contract's `sources` (decisions §10): each chain's state, the same on every instance; [] without a sources file. */
  sourcesStatus(): Promise<SourceStatus[]>
  /** GraphQL subscriptions over SSE (docs/push.md): streams open, hub listeners, and the end of them all (shutdown). */
  subscriptions: { readonly open: number; readonly listeners: number; close(): void }
  /** How old the data is (decisions §10): /v1/status, GraphQL `meta`, Data-As-Of and vaultgate_data_age_seconds. */
  freshness: Freshness
  /** Every route the app serves (method and Hono path), for the documentation checks. */
  routes: { method: string; path: string }[]
  /** From now on /readyz answers 503 (the process is shutting down; load balancers take it out). */
  drain(): void
  /** Stops background work, after the webhook deliveries in flight are recorded (not the database: its owner closes it). */
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
  earlyAnswering = true,
  hotPath = config.hotPath !== 'off',
  chainSources,
}: {
  config: Config
  db: Database
  clock?: Clock
  examples?: ExampleIds | Promise<ExampleIds | undefined>
  /** The parsed VAULT_SOURCES_FILE (src/server.ts reads it before the database is opened): the chains to follow. */
  chainSources?: SourcesConfig
  /** Answer cache hits and key verifications before the routes (src/http/early-answers.ts); off only to compare both paths in tests. */
  earlyAnswering?: boolean
  /** Answer the hot routes without Hono (src/http/hot/); off to compare both paths in tests. Default: HOT_PATH. */
  hotPath?: boolean
}): App {
  useLogLevel(config.logLevel)
  // Rate-limit counters (in Redis when REDIS_URL is set).
  const limits = createRateLimits(config)
  // Verifications leave usage counts and last-use times in memory, written every API_KEY_USAGE_FLUSH_MS.
  const usage = createUsageRecorder({ write: flushUsageThrough(db.prisma), flushMs: config.apiKeyUsageFlushMs })
  // Usage older than 90 days goes: an hour after start, then hourly (every instance; the DELETE is idempotent).
  const prune = () => pruneUsage(db.prisma, clock())
  const retention = setInterval(() => void prune().catch((err: unknown) => logger.warn({ err }, 'API key usage retention failed')), 3_600_000)
  retention.unref()
  // Other instances' revocations arrive by NOTIFY on the process' one LISTEN connection.
  const verifier = createApiKeyVerifier({
    prisma: db.prisma,
    clock,
    cacheTtlMs: config.apiKeyCacheTtlMs,
    lookupTimeoutMs: config.pool.connectTimeoutMs,
    changes: db.changes,
    onCacheLookup: (hit) => cacheLookups.inc({ cache: 'api_key', result: hit ? 'hit' : 'miss' }),
    // Per key (RATE_LIMIT_VERIFY_PER_MINUTE): one key hammered cannot starve the others.
    limiter: (rawKey) => limits.consume('verify', rawKey),
    usage,
  })
  // Subscriptions (docs/spec/decisions.md §11): one hub per instance hands the commits heard on the
  // process' one LISTEN connection to the subscribers they concern.
  const live = createLiveHub(db.changes)
  const streams = eventStreams({ ...config.subscriptions, who: config })
  // Freshness (decisions §10): read once, then after each import (its NOTIFY, or this process' hook).
  const freshness = createFreshness({
    db: db.prisma,
    staleAfterMs: config.staleAfterMs,
    sources: () => sourcesStatus(db.prisma, chainSources),
    changes: db.changes,
  })
  // While the times cannot be read (the database is away), the gauge goes on from the last ones read.
  let lastDataAsOf: Date | null = null
  const stopDataAge = observeDataAge(async () => {
    const dataAsOf = await Promise.resolve(freshness.current()).then(
      (t) => (lastDataAsOf = t.dataAsOf),
      () => lastDataAsOf,
    )
    return dataAsOf === null ? null : (clock().getTime() - dataAsOf.getTime()) / 1000
  })
  const yoga = createGatewayYoga({ config, db: db.prisma, clock, limits, examples, live, freshness })

  // Off until the change feed listens: an import elsewhere must never leave stale answers here.
  const responseCache = new ResponseCache(config.responseCache.ttlMs, config.responseCache.maxBytes, Date.now, config.responseCache.staleMs)
  responseCache.setLive(false)
  const dataFeed =
    config.responseCache.ttlMs > 0
      ? watchDataChanges(db.changes, { onChange: () => responseCache.clear(), onLive: (live) => responseCache.setLive(live) })
      : { ready: Promise.resolve(), stop: async () => {} }
  /** This process' own imports (admin, chain source): their NOTIFY comes back too, but later. */
  const dataChanged = () => {
    responseCache.clear()
    freshness.invalidate()
  }

  // Webhooks (docs/spec/decisions.md §11): the outbox is written by the imports; this instance's
  // worker delivers, woken by NOTIFY on the one LISTEN connection and polling as a backstop. They
  // keep the real time whatever `clock` says: receivers check signature timestamps against theirs.
  const secrets = createSecretBox(config.webhooks.secretKeys)
  if (config.production && !secrets.sealing) logger.warn('WEBHOOK_SECRET_KEY is not set: webhook signing secrets are stored unsealed in the database')
  const outbound = { requireHttps: config.webhooks.requireHttps, allowPrivate: config.webhooks.allowPrivate }
  const webhooks = createWebhookService({ prisma: db.prisma, secrets, policy: outbound })
  const webhookWorker = config.webhooks.worker
    ? createWebhookWorker({
        prisma: db.prisma,
        secrets,
        policy: outbound,
        wakeups: feedWakeups(db.changes),
        concurrency: config.webhooks.concurrency,
        idlePollMs: config.webhooks.pollMs,
      })
    : undefined
  webhookWorker?.start()

  // The chain source (docs/spec/decisions.md §12): one instance at a time follows the chains (a
  // session advisory lock on PostgreSQL; embedded PGlite belongs to this one process). Its writes
  // go through the importer, so webhooks and the change NOTIFY come with them.
  const sourceFollower = chainSources
    ? startSourceFollower({
        sources: chainSources,
        db: db.prisma,
        lock: db.pool ? { connection: { ...db.pool.options } } : undefined,
        onDataChanged: dataChanged,
        maxClockSkewMs: config.chainMaxClockSkewMs,
      })
    : undefined

  const app = new Hono<AppEnv>()
  // The request's id, log line and metrics.
  app.use('*', requestStart)
  // docs/hardening.md: the one header policy (security, CSP, CORS) on every answer;
  // on the public routes a body size limit, a per-client-IP rate limit and a deadline per request.
  app.use('*', responseHeaders(config))
  app.use('/graphql', explainNotAcceptable)
  const classOf = operationClassifier(schema)
  app.use('/graphql', classifyRefusedGraphql(classOf, config.requests.bodyLimitBytes))
  app.use('/readyz', answerWithin(config.pool.connectTimeoutMs, 'The database is unavailable; try again shortly.'))
  // The verifier gives up on the database at DB_CONNECT_TIMEOUT_MS (src/keys/verifier.ts); this is
  // the backstop for anything else an internal request could wait on.
  app.use('/internal/*', answerWithin(config.pool.connectTimeoutMs + 500, 'API key state cannot be checked right now; refuse the key and retry shortly.'))
  for (const path of ['/graphql', '/v1/*']) {
    app.use(path, corsPreflight(config), limitBody(config.requests.bodyLimitBytes), limitByClientIp(limits, config), requestDeadline(config.requests.timeoutMs))
  }
  // Open subscription streams, within SUBSCRIPTIONS_MAX and SUBSCRIPTIONS_PER_IP, ended on shutdown.
  app.use('/graphql', streams.middleware)
  observePool(db.pool)
  useRequestTimeout(config.requests.timeoutMs)
  // SQL text is parameterised (no values), so slow statements can be logged as they are.
  const stopSqlObservation = observeSql((sql, ms) => logger.warn({ ms: Math.round(ms), sql: sql.slice(0, 500) }, 'slow SQL statement'), config.slowQueryMs)

  app.get('/healthz', (c) => c.json({ status: 'ok', server_time_ms: Date.now() }))
  app.get('/metrics', async (c) => {
    // METRICS_TOKEN: scrapers present it as a bearer token (compared in constant time); unset, /metrics is open.
    if (config.metricsToken && !bearerMatches(c.req.header('authorization'), config.metricsToken))
      throw new AppError('unauthorized', 'A valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>).', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      })
    return c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType })
  })
  let draining = false
  app.get('/readyz', async (c) => {
    if (draining) return errorResponse(c, new AppError('unavailable', 'The gateway is shutting down.'))
    await db.ping()
    return c.json({ status: 'ok', data: { storage: db.mode, migrations: 'applied' }, server_time_ms: Date.now() })
  })

  app.post(
    '/graphql',
    cachedGraphql(responseCache, classOf, (request, scope) => Promise.resolve(yoga.fetch(request, scope)), freshness),
  )
  app.on(['GET', 'OPTIONS'], '/graphql', async (c) => {
    const query = c.req.query('query')
    const kind = query === undefined ? undefined : classOf(query, c.req.query('operationName'))
    if (kind?.keyManagement) c.set('keyManagement', true)
    // A query's Data-As-Of (src/http/headers.ts), once it ran; GraphiQL's page (no query) is not a read.
    const data = c.req.method === 'GET' && kind ? await operationData(kind, freshness) : undefined
    const response = await yoga.fetch(c.req.raw, { requestId: c.get('requestId'), deadline: c.get('deadline'), data, client: c.get('client') })
    if (data) c.set('dataAsOf', data.header)
    return response
  })
  app.route('/admin', adminRoutes(config, { db: db.prisma, clock, onDataChanged: dataChanged, webhooks, limits }))
  app.route('/internal', internalRoutes(config, verifier, limits))
  const v1 = new Hono<AppEnv>()
  mountRoutes(v1, yoga, restRoutes, responseCache, freshness)
  app.route('/v1', v1)
  // Integrator surfaces: the OpenAPI document, the browsable reference and the vault explorer.
  app.route('/', referenceRoutes())
  app.route('/', explorerRoutes())
  // GraphiQL's bundle, apart from its page (src/graphql/graphiql-page.ts).
  if (config.graphql.graphiql) app.route('/', graphiqlRoutes())

  app.notFound((c) => errorResponse(c, new AppError('not_found', `No route for ${c.req.method} ${quoted(c.req.path)}.`)))
  app.onError(answerError)

  // Cache hits and key verifications are answered before Hono (docs/adr/0003-early-answers.md).
  const routes = (request: Request, env: unknown) => Promise.resolve(app.fetch(request, env as never))
  const early = earlyAnswering ? earlyAnswers({ config, cache: responseCache, limits, verifier }, routes) : () => undefined
  const fetchGeneral = (request: Request, env?: unknown) => early(request, env) ?? routes(request, env)
  // The hot routes (docs/adr/0004-hot-path.md): uncached reads, answered with the routes' own
  // functions but without Hono's middleware chain or Web Request/Response round trips.
  const hot = hotPath
    ? compressedHot(
        config.compressMinBytes,
        firstHot(
          hotGraphql({ config, yoga, limits, cache: responseCache, classOf, freshness }),
          hotRest({ config, yoga, limits, cache: responseCache, routes: restRoutes, freshness }),
        ),
      )
    : undefined
  /** In process (tests, embedders): the hot routes from a Web Request, a request they give back to the routes with what they learnt. */
  const fetchHot = async (request: Request, env: unknown, work: NonNullable<ReturnType<HotHandler>>): Promise<Response> => {
    const out = await work
    if (isAnswer(out))
      return new Response(typeof out.body === 'object' && out.body !== null ? new Uint8Array(out.body) : out.body, { status: out.status, headers: out.headers })
    const copy =
      out.body === undefined ? request : new Request(request.url, { method: request.method, headers: request.headers, body: out.body, signal: request.signal })
    // Counted already: straight to the routes; otherwise as any request (a cache hit is the early answers').
    return out.counted ? routes(copy, { ...(env as object | undefined), handOn: { counted: out.counted } }) : fetchGeneral(copy, env)
  }
  return {
    fetch: withCompression(config.compressMinBytes, (request, env) => {
      const work = hot?.(requestExchange(request, env))
      return work ? fetchHot(request, env, work) : fetchGeneral(request, env)
    }),
    hot,
    config,
    fetchGeneral: withCompression(config.compressMinBytes, fetchGeneral),
    yoga,
    limits,
    verifier,
    keyUsage: { ...usage, prune },
    responseCache,
    webhooks,
    webhookWorker,
    sourceFollower,
    sourcesStatus: () => sourcesStatus(db.prisma, chainSources),
    freshness,
    ready: Promise.all([verifier.ready, dataFeed.ready, db.changes.ready]).then(() => {}),
    subscriptions: {
      get open() {
        return streams.open
      },
      get listeners() {
        return live.listeners
      },
      close: () => streams.close(),
    },
    routes: app.routes.filter((r) => r.method !== 'ALL').map(({ method, path }) => ({ method, path })),
    drain: () => {
      draining = true
    },
    close: async () => {
      streams.close()
      live.close()
      await sourceFollower?.stop()
      await webhookWorker?.stop()
      stopSqlObservation()
      limits.close()
      clearInterval(retention)
      stopDataAge()
      await Promise.all([verifier.close(), dataFeed.stop(), freshness.stop()])
      // After the verifier: no verification can add to the batch once it is written.
      await usage.close()
    },
  }
}

/** The hot routes' answers meet the same compression rule as every other answer (src/http/compression.ts). */
function compressedHot(minBytes: number, handler: HotHandler): HotHandler {
  if (minBytes <= 0) return handler
  return (x) =>
    handler(x)?.then((out) => (isAnswer(out) ? compressAnswer(out, x.method, x.header('accept-encoding'), minBytes) : out) as Promise<Answer | HandBack>)
}
