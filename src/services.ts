import type { Config } from './config.js'
import type { Clock } from './core/clock.js'
import { logger, useLogLevel } from './core/log.js'
import { cacheLookups, observeDataAge, observePool, useRequestTimeout } from './core/metrics.js'
import { createRateLimits } from './core/rate-limit.js'
import { type Database, observeSql } from './db/client.js'
import { createReadRouting } from './db/replicas.js'
import { createFreshness } from './freshness/status.js'
import type { ExampleIds } from './graphql/examples.js'
import { DocumentStore } from './graphql/documents.js'
import { createGatewayYoga } from './graphql/yoga.js'
import { ResponseCache } from './http/response-cache.js'
import { DATA_CHANGED_CHANNEL, watchDataChanges } from './importer/changes.js'
import { flushUsageThrough } from './keys/store.js'
import { createUsageRecorder, pruneUsage } from './keys/usage.js'
import { createApiKeyVerifier } from './keys/verifier.js'
import { createLiveHub } from './live/hub.js'
import type { SourcesConfig } from './sources/config.js'
import { startSourceFollower } from './sources/follower.js'
import { sourcesStatus } from './sources/status.js'
import { createSecretBox } from './webhooks/secrets.js'
import { createWebhookService } from './webhooks/service.js'
import { feedWakeups } from './webhooks/wakeups.js'
import { createWebhookWorker } from './webhooks/worker.js'

// The services of one gateway process, wired together (src/app.ts puts the request pipeline in
// front of them): limits, key verification and its usage, subscriptions, freshness, GraphQL, the
// response cache, webhooks and the chain source, each with what it needs and how it stops.

export type Services = ReturnType<typeof createServices>

export function createServices({
  config,
  db,
  clock,
  examples,
  chainSources,
}: {
  config: Config
  db: Database
  clock: Clock
  examples?: ExampleIds | Promise<ExampleIds | undefined>
  chainSources?: SourcesConfig
}) {
  useLogLevel(config.logLevel)
  // GRAPHQL_DOCUMENTS_FILE, read once, first: a file that cannot serve stops the start (ConfigError) before anything opens.
  const documents = DocumentStore.fromConfig(config.graphql)
  // Read replicas (src/db/replicas.ts): public and wallet reads ask `reads.reader()` for their client.
  // Told of every change first (its handler is the channel's first), so no reader that a change
  // wakes (the response cache refilling, a subscription event) reads a replica that lacks it.
  const reads = createReadRouting({ primary: db, config })
  const stopReadYourWrites =
    config.replicas.urls.length > 0 && db.pool
      ? (() => {
          const off = db.changes.on(DATA_CHANGED_CHANNEL, () => reads.changed())
          // Notifications sent while the feed was away are lost: any change may have happened.
          let wasLive = db.changes.live
          const offLive = db.changes.onLive((live) => {
            if (live && !wasLive) reads.changed()
            wasLive = live
          })
          return () => {
            off()
            offLive()
          }
        })()
      : () => {}
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
  const yoga = createGatewayYoga({ config, db: db.prisma, reads: reads.reader, clock, limits, examples, live, freshness, documents })

  // Off until the change feed listens: an import elsewhere must never leave stale answers here.
  const responseCache = new ResponseCache(config.responseCache.ttlMs, config.responseCache.maxBytes, Date.now, config.responseCache.staleMs)
  responseCache.setLive(false)
  const dataFeed =
    config.responseCache.ttlMs > 0
      ? watchDataChanges(db.changes, { onChange: () => responseCache.clear(), onLive: (on) => responseCache.setLive(on) })
      : { ready: Promise.resolve(), stop: async () => {} }
  /** This process' own imports (admin, chain source): their NOTIFY comes back too, but later. */
  const dataChanged = () => {
    reads.changed()
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

  observePool(db.pool)
  useRequestTimeout(config.requests.timeoutMs)
  // SQL text is parameterised (no values), so slow statements can be logged as they are.
  const stopSqlObservation = observeSql((sql, ms) => logger.warn({ ms: Math.round(ms), sql: sql.slice(0, 500) }, 'slow SQL statement'), config.slowQueryMs)

  return {
    limits,
    verifier,
    keyUsage: { ...usage, prune },
    live,
    freshness,
    yoga,
    documents,
    responseCache,
    dataChanged,
    webhooks,
    webhookWorker,
    sourceFollower,
    sourcesStatus: () => sourcesStatus(db.prisma, chainSources),
    /** The read replicas' states (/readyz); `ready`: their first health poll is done (reads go to the primary until then). */
    replicas: { status: reads.status, ready: reads.ready },
    ready: Promise.all([verifier.ready, dataFeed.ready, db.changes.ready]).then(() => {}),
    /** Stops background work, after the webhook deliveries in flight are recorded (not the database: its owner closes it). */
    close: async () => {
      live.close()
      await sourceFollower?.stop()
      await webhookWorker?.stop()
      stopSqlObservation()
      limits.close()
      clearInterval(retention)
      stopDataAge()
      stopReadYourWrites()
      await Promise.all([verifier.close(), dataFeed.stop(), freshness.stop(), reads.close()])
      // After the verifier: no verification can add to the batch once it is written.
      await usage.close()
    },
  }
}
