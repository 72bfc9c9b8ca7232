import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type pg from 'pg'
import { packageVersion } from './paths.js'

// One registry per process, exposed at /metrics. Labels are bounded: route patterns (never raw
// paths), GraphQL operation names (capped), error codes from a fixed set.

export const registry = new Registry()
// Node's process metrics under their standard names (process_cpu_seconds_total,
// nodejs_heap_size_total_bytes, …): the names stock Node.js dashboards and alerts query.
collectDefaultMetrics({ register: registry })

new Gauge({
  name: 'vaultgate_build_info',
  help: 'Always 1; the labels say which vaultgate version runs on which Node.js.',
  labelNames: ['version', 'node'] as const,
  registers: [registry],
}).set({ version: packageVersion, node: process.versions.node }, 1)

/** Latency bucket bounds (seconds) below the request deadline; the deadline itself is the last one. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]

/** Buckets up to `timeoutMs` (REQUEST_TIMEOUT_MS): a request that ran until its deadline is not lumped into +Inf with a hung one. */
export const latencyBuckets = (timeoutMs: number) => [...LATENCY_BUCKETS.filter((b) => b < timeoutMs / 1000), timeoutMs / 1000]

const httpDurationOf = (timeoutMs: number) =>
  new Histogram({
    name: 'vaultgate_http_request_duration_seconds',
    help: 'HTTP request latency by route pattern.',
    labelNames: ['route', 'method'] as const,
    buckets: latencyBuckets(timeoutMs),
    registers: [registry],
  })

/** The default REQUEST_TIMEOUT_MS (src/config.ts); useRequestTimeout() sets the configured one. */
export let httpDuration = httpDurationOf(15_000)

/** Makes the HTTP latency buckets end at the configured request deadline (the app's, at creation). */
export function useRequestTimeout(timeoutMs: number) {
  const wanted = latencyBuckets(timeoutMs)
  if ((httpDuration as unknown as { upperBounds: number[] }).upperBounds.join() === wanted.join()) return
  registry.removeSingleMetric('vaultgate_http_request_duration_seconds')
  httpDuration = httpDurationOf(timeoutMs)
}

export const httpRequests = new Counter({
  name: 'vaultgate_http_requests_total',
  help: 'HTTP requests by route pattern, method and status.',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
})

export const graphqlOperations = new Counter({
  name: 'vaultgate_graphql_operations_total',
  help: 'GraphQL operations by operation name and type.',
  labelNames: ['operation', 'type'] as const,
  registers: [registry],
})

export const graphqlDuration = new Histogram({
  name: 'vaultgate_graphql_operation_duration_seconds',
  help: 'GraphQL execution latency by operation name.',
  labelNames: ['operation'] as const,
  // GraphQL runs under the same deadline as its HTTP request.
  buckets: latencyBuckets(15_000),
  registers: [registry],
})

export const errorsByCode = new Counter({
  name: 'vaultgate_errors_total',
  help: 'Errors answered to clients, by error code (REST and GraphQL).',
  labelNames: ['code'] as const,
  registers: [registry],
})

export const sqlDuration = new Histogram({
  name: 'vaultgate_sql_statement_duration_seconds',
  help: 'SQL statements sent by the Prisma client.',
  labelNames: ['outcome'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
  registers: [registry],
})

export const cacheLookups = new Counter({
  name: 'vaultgate_cache_lookups_total',
  help: 'Response-cache and key-cache lookups by cache and result (hit, miss, or stale: an expired response answered while it is refreshed).',
  labelNames: ['cache', 'result'] as const,
  registers: [registry],
})

export const keyUsageFlushes = new Counter({
  name: 'vaultgate_api_key_usage_flushes_total',
  help: 'Batched writes of API-key usage counts and last-use times, by result (written, failed: kept for the next one).',
  labelNames: ['result'] as const,
  registers: [registry],
})

export const keyVerifications = new Counter({
  name: 'vaultgate_api_key_verifications_total',
  help: 'API-key verifications by result (active, or the reason it is not).',
  labelNames: ['result'] as const,
  registers: [registry],
})

const MAX_OPERATION_NAMES = 200
const seenOperations = new Set<string>()

/** Operation names come from clients: cap the label's cardinality. */
export function operationLabel(name: string | undefined | null): string {
  if (!name) return 'anonymous'
  if (seenOperations.has(name)) return name
  if (seenOperations.size >= MAX_OPERATION_NAMES || !/^[_A-Za-z][_0-9A-Za-z]{0,63}$/.test(name)) return 'other'
  seenOperations.add(name)
  return name
}

let currentPool: pg.Pool | undefined

// Read at scrape time; zero in embedded mode (PGlite has no pool).
new Gauge({
  name: 'vaultgate_db_pool_connections',
  help: 'Open connections in the PostgreSQL pool.',
  registers: [registry],
  collect() {
    this.set(currentPool?.totalCount ?? 0)
  },
})
new Gauge({
  name: 'vaultgate_db_pool_idle',
  help: 'Idle connections in the PostgreSQL pool.',
  registers: [registry],
  collect() {
    this.set(currentPool?.idleCount ?? 0)
  },
})
new Gauge({
  name: 'vaultgate_db_pool_in_use',
  help: 'PostgreSQL pool connections checked out by queries.',
  registers: [registry],
  collect() {
    this.set((currentPool?.totalCount ?? 0) - (currentPool?.idleCount ?? 0))
  },
})
new Gauge({
  name: 'vaultgate_db_pool_waiting',
  help: 'Requests waiting for a PostgreSQL connection.',
  registers: [registry],
  collect() {
    this.set(currentPool?.waitingCount ?? 0)
  },
})

export function observePool(pool: pg.Pool | undefined) {
  currentPool = pool
}

/** The age of the newest data of the app serving this process, in seconds (null: no data), read at scrape time. */
let dataAgeSource: (() => Promise<number | null>) | undefined

// Decisions §10: what an operator alerts on (the gateway keeps answering and stays ready when its
// data is old). +Inf while there is no data at all, so an alert on the age fires then too.
new Gauge({
  name: 'vaultgate_data_age_seconds',
  help: 'Seconds since the newest vault snapshot or transaction the gateway holds (data_as_of of /v1/status); +Inf without data.',
  registers: [registry],
  async collect() {
    if (!dataAgeSource) return
    const age = await dataAgeSource()
    this.set(age === null ? Number.POSITIVE_INFINITY : Math.max(0, age))
  },
})

/** Sets where vaultgate_data_age_seconds reads the data's age; returns the function that unsets it. */
export function observeDataAge(source: () => Promise<number | null>): () => void {
  dataAgeSource = source
  return () => {
    if (dataAgeSource === source) dataAgeSource = undefined
  }
}

export const rateLimitDecisions = new Counter({
  name: 'vaultgate_rate_limit_decisions_total',
  help: 'Rate-limit decisions by bucket (public, keys, verify) and result (allowed, limited, fallback = counted in-process because Redis did not answer).',
  labelNames: ['bucket', 'result'] as const,
  registers: [registry],
})

// The chain source (src/sources/follower.ts), labelled by the sources file's chain names. Set on
// the instance that follows the chains (one at a time; vaultgate_source_follower says which).
export const sourceFollower = new Gauge({
  name: 'vaultgate_source_follower',
  help: '1 on the instance following the chains of VAULT_SOURCES_FILE (it holds the lock), 0 on the others.',
  registers: [registry],
})

export const sourceHeadBlock = new Gauge({
  name: 'vaultgate_source_head_block',
  help: "The chain's newest block, as its node last answered.",
  labelNames: ['chain'] as const,
  registers: [registry],
})

export const sourceSyncedBlock = new Gauge({
  name: 'vaultgate_source_synced_block',
  help: 'The newest block recorded for every vault of the chain.',
  labelNames: ['chain'] as const,
  registers: [registry],
})

export const sourceLagBlocks = new Gauge({
  name: 'vaultgate_source_lag_blocks',
  help: 'Blocks between the chain head and the newest block recorded for every vault (confirmations included).',
  labelNames: ['chain'] as const,
  registers: [registry],
})

export const sourceRpcFailures = new Counter({
  name: 'vaultgate_source_rpc_failures_total',
  help: 'Failed JSON-RPC requests of the chain source (timeouts, HTTP and node errors; not calls that revert), by chain and whether they were retried.',
  labelNames: ['chain', 'retried'] as const,
  registers: [registry],
})

export const sourceReorgs = new Counter({
  name: 'vaultgate_source_reorgs_total',
  help: 'Reorgs deeper than the confirmations that rolled recorded blocks back.',
  labelNames: ['chain'] as const,
  registers: [registry],
})

export const sourcePaused = new Gauge({
  name: 'vaultgate_source_paused',
  help: '1 while the chain is paused, by reason: node_contradicts (a recorded block given another hash, not consistently) and block_time_ahead (blocks dated beyond CHAIN_MAX_CLOCK_SKEW_MS) are retried by themselves (status degraded); deep_reorg (every journaled block replaced) waits for an operator (status stopped). Nothing is deleted meanwhile.',
  labelNames: ['chain', 'reason'] as const,
  registers: [registry],
})

export const subscriptionsOpen = new Gauge({
  name: 'vaultgate_subscriptions_open',
  help: 'GraphQL subscriptions open on this instance (SSE streams and WebSocket subscriptions).',
  registers: [registry],
})

export const subscriptionsRefused = new Counter({
  name: 'vaultgate_subscriptions_refused_total',
  help: 'Subscription streams refused, by reason (instance = SUBSCRIPTIONS_MAX, ip = SUBSCRIPTIONS_PER_IP, draining = shutting down).',
  labelNames: ['reason'],
  registers: [registry],
})

/** What the replica gauges read at scrape time (src/db/replicas.ts); unset without replicas. */
let replicaSource: (() => { name: string; usable: boolean; lagSeconds: number | null }[]) | undefined

// Read replicas (docs/operations.md "Read replicas"): per replica, whether reads may go to it and
// how far behind the primary its data may be.
new Gauge({
  name: 'vaultgate_db_replica_up',
  help: '1 while reads may go to the replica (it answers, within REPLICA_MAX_LAG_MS); 0 while it is skipped (down or lagging).',
  labelNames: ['replica'] as const,
  registers: [registry],
  collect() {
    this.reset()
    for (const r of replicaSource?.() ?? []) this.set({ replica: r.name }, r.usable ? 1 : 0)
  },
})
new Gauge({
  name: 'vaultgate_db_replica_lag_seconds',
  help: "How far behind the primary the replica's data may be, at the last health poll (+Inf before it answers one).",
  labelNames: ['replica'] as const,
  registers: [registry],
  collect() {
    this.reset()
    for (const r of replicaSource?.() ?? []) this.set({ replica: r.name }, r.lagSeconds ?? Number.POSITIVE_INFINITY)
  },
})

/** Public and wallet reads by where they went: `replica`, `primary` (no replica usable, or read your writes), `primary_retry` (a statement a replica failed, run again on the primary). */
export const replicaReads = new Counter({
  name: 'vaultgate_db_reads_total',
  help: 'Public and wallet reads with DATABASE_REPLICA_URLS set, by target: replica, primary (none usable, or read your writes), primary_retry (a statement a replica failed).',
  labelNames: ['target'] as const,
  registers: [registry],
})

export function observeReplicas(source: typeof replicaSource) {
  replicaSource = source
}
