import { Hono } from 'hono'
import type { Config } from '../../config.js'
import type { Clock } from '../../core/clock.js'
import { AppError, quoted } from '../../core/errors.js'
import { registry } from '../../core/metrics.js'
import type { RateLimits } from '../../core/rate-limit.js'
import type { Database } from '../../db/client.js'
import type { ReplicaStatus } from '../../db/replicas.js'
import type { WebhookService } from '../../webhooks/service.js'
import type { AppEnv } from '../env.js'
import { answerError, errorResponse } from '../errors.js'
import { corsPreflight } from '../headers.js'
import { bearerMatches } from '../middleware/bearer.js'
import { answerWithin } from '../middleware/limits.js'
import { adoptExchange } from '../pipeline/long-tail.js'
import { adminRoutes } from './admin.js'
import { explorerRoutes } from './explorer.js'
import { graphiqlRoutes } from './graphiql.js'
import { internalRoutes } from './internal.js'
import { referenceRoutes } from './reference.js'

/**
 * The long tail of routes, a Hono app behind the request pipeline's last step
 * (src/http/pipeline/long-tail.ts): probes, metrics, admin, internal, the integrator pages
 * (reference, explorer, GraphiQL's bundle), the API's CORS preflights, and not found.
 */
export function longTailRoutes({
  config,
  db,
  clock,
  limits,
  webhooks,
  onDataChanged,
  replicas = () => [],
  draining,
}: {
  config: Config
  db: Pick<Database, 'ping' | 'mode' | 'prisma'>
  clock: Clock
  limits: RateLimits
  webhooks: WebhookService
  onDataChanged: () => void
  /** The read replicas' states (DATABASE_REPLICA_URLS): shown, never failing readiness while the primary serves. */
  replicas?: () => ReplicaStatus[]
  /** True once the process is shutting down: /readyz answers 503. */
  draining: () => boolean
}): Hono<AppEnv> {
  const app = new Hono<AppEnv>()
  app.use('*', adoptExchange)
  app.use('/readyz', answerWithin(config.pool.connectTimeoutMs, 'The database is unavailable; try again shortly.'))
  app.use('/graphql', corsPreflight(config))
  app.use('/v1/*', corsPreflight(config))
  app.get('/healthz', (c) => c.json({ status: 'ok', server_time_ms: Date.now() }))
  app.get('/metrics', async (c) => {
    // METRICS_TOKEN: scrapers present it as a bearer token (compared in constant time); unset, /metrics is open.
    if (config.metricsToken && !bearerMatches(c.req.header('authorization'), config.metricsToken))
      throw new AppError('unauthorized', 'A valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>).', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      })
    return c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType })
  })
  app.get('/readyz', async (c) => {
    if (draining()) return errorResponse(c, new AppError('unavailable', 'The gateway is shutting down.'))
    await db.ping()
    const states = replicas()
    return c.json({
      status: 'ok',
      data: { storage: db.mode, migrations: 'applied', ...(states.length > 0 ? { replicas: states } : {}) },
      server_time_ms: Date.now(),
    })
  })
  app.route('/admin', adminRoutes(config, { db: db.prisma, clock, onDataChanged, webhooks, limits }))
  app.route('/internal', internalRoutes(config, limits))
  app.route('/', referenceRoutes())
  app.route('/', explorerRoutes())
  // GraphiQL's bundle, apart from its page (src/graphql/graphiql-page.ts).
  if (config.graphql.graphiql) app.route('/', graphiqlRoutes())
  app.notFound((c) => errorResponse(c, new AppError('not_found', `No route for ${c.req.method} ${quoted(c.req.path)}.`)))
  app.onError(answerError)
  return app
}
