import { createHash } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { PrismaPg } from '@prisma/adapter-pg'
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory, SqlQuery, SqlQueryable } from '@prisma/driver-adapter-utils'
import pg from 'pg'
import { PrismaPGlite } from 'pglite-prisma-adapter'
import type { Config } from '../config.js'
import { sqlDuration } from '../core/metrics.js'
import { PrismaClient } from '../generated/prisma/client.js'
import { createChangeFeed, type ChangeFeed } from './listen.js'
import { applyMigrations, type AppliedRow } from './migrate.js'

export type Db = PrismaClient

export interface Database {
  mode: 'embedded' | 'postgres'
  prisma: PrismaClient
  factory: SqlMigrationAwareDriverAdapterFactory
  /** Set in postgres mode: the explicit pool behind the adapter. */
  pool?: pg.Pool
  /** Set in embedded mode. */
  pglite?: PGlite
  /** The process' one LISTEN connection (src/db/listen.ts), opened on first subscription. */
  readonly changes: ChangeFeed
  /** Applies pending migrations; returns the names applied. */
  migrate(): Promise<string[]>
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>
  close(): Promise<void>
}

/**
 * pglite-prisma-adapter's executeScript neither awaits the script nor reports its errors, and the
 * schema engine runs migrations through it: await it so a failing migration fails the boot.
 */
class EmbeddedAdapterFactory extends PrismaPGlite {
  constructor(private readonly db: PGlite) {
    super(db)
  }
  override async connect(): Promise<SqlDriverAdapter> {
    const adapter = (await super.connect()) as SqlDriverAdapter & { onError(e: unknown): never }
    adapter.executeScript = async (script: string) => {
      try {
        await this.db.exec(script)
      } catch (e) {
        adapter.onError(e)
      }
    }
    return adapter
  }
}

/**
 * @prisma/adapter-pg's executeScript splits a script at every `;` and sends the pieces one by one:
 * a migration holding a function body (PL/pgSQL is full of `;`) breaks apart. The script is sent
 * whole instead (PostgreSQL's simple query protocol runs several statements as one implicit
 * transaction, so a failing migration leaves nothing half applied).
 */
class PostgresAdapterFactory extends PrismaPg {
  constructor(
    private readonly pool: pg.Pool,
    options?: ConstructorParameters<typeof PrismaPg>[1],
  ) {
    super(pool, options)
  }
  override async connect() {
    const adapter = await super.connect()
    // onError (protected) turns a driver error into Prisma's DriverAdapterError, as the original does.
    const onError = (adapter as unknown as { onError(e: unknown): never }).onError.bind(adapter)
    adapter.executeScript = async (script: string) => {
      try {
        await this.pool.query(script)
      } catch (e) {
        onError(e)
      }
    }
    return adapter
  }
}

export interface SqlEvent {
  sql: string
  durationMs: number
  ok: boolean
}

/**
 * Listeners told of every SQL statement the Prisma client sends (tests count statements per
 * request; metrics and the slow-query log use the timings). Empty in the common case.
 */
export const sqlObservers = new Set<(event: SqlEvent) => void>()

function observe<Q extends SqlQueryable>(q: Q): Q {
  const wrap =
    <R>(run: (query: SqlQuery) => Promise<R>) =>
    async (query: SqlQuery): Promise<R> => {
      if (sqlObservers.size === 0) return run(query)
      const started = performance.now()
      let ok = false
      try {
        const result = await run(query)
        ok = true
        return result
      } finally {
        const event = { sql: query.sql, durationMs: performance.now() - started, ok }
        for (const fn of sqlObservers) fn(event)
      }
    }
  q.queryRaw = wrap(q.queryRaw.bind(q))
  q.executeRaw = wrap(q.executeRaw.bind(q))
  return q
}

/** Times every SQL statement (metrics); also feeds the slow-statement log. Returns the function that stops it. */
export function observeSql(onSlow: (sql: string, ms: number) => void, slowMs: number): () => void {
  const observer = (e: SqlEvent) => {
    sqlDuration.observe({ outcome: e.ok ? 'ok' : 'error' }, e.durationMs / 1000)
    if (e.durationMs >= slowMs) onSlow(e.sql, e.durationMs)
  }
  sqlObservers.add(observer)
  return () => {
    sqlObservers.delete(observer)
  }
}

/** The factory the Prisma client uses: every connection and transaction reports its statements. */
export function observedFactory(factory: SqlMigrationAwareDriverAdapterFactory): SqlMigrationAwareDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connectToShadowDb: () => factory.connectToShadowDb(),
    connect: async () => {
      const adapter = observe(await factory.connect())
      const startTransaction = adapter.startTransaction.bind(adapter)
      adapter.startTransaction = async (isolationLevel) => observe(await startTransaction(isolationLevel))
      return adapter
    },
  }
}

/**
 * The pool behind Prisma in postgres mode (JIT off, see below). In a network partition the server neither answers nor
 * refuses: `statement_timeout` is the server's and never arrives, so the client gives up on its own
 * (`query_timeout`, Config.pool.queryTimeoutMs, after which the connection is dropped) and TCP
 * keep-alive finds dead peers under idle pooled connections.
 */
export function createPool(url: string, pool: Config['pool'], applicationName = 'vaultgate', { readOnly = false }: { readOnly?: boolean } = {}): pg.Pool {
  return new pg.Pool({
    connectionString: url,
    max: pool.max,
    connectionTimeoutMillis: pool.connectTimeoutMs,
    idleTimeoutMillis: pool.idleTimeoutMs,
    statement_timeout: pool.statementTimeoutMs || undefined,
    query_timeout: pool.queryTimeoutMs,
    keepAlive: true,
    application_name: applicationName,
    // No JIT: every statement here is a few index probes, but the planner's default row estimates
    // for set-returning functions (jsonb_array_elements_text: 100, generate_series: 1000) push the
    // series statements past jit_above_cost, and compiling them took 1.2-1.5 s on PostgreSQL 15 for
    // a 1 ms query (the composition and performance series; PGlite has no JIT).
    // `readOnly` (the replicas' pools, src/db/replicas.ts): every transaction of the session is read
    // only, so a write sent there by mistake fails (25006) even on a server that would take it.
    options: readOnly ? '-c jit=off -c default_transaction_read_only=on' : '-c jit=off',
  })
}

const MAX_STATEMENT_NAMES = 10_000

/**
 * Names for prepared statements: one per distinct SQL text (Prisma's SQL is parameterised, so the
 * set is small and fixed), so node-postgres parses and plans each statement once per connection
 * instead of once per query.
 */
export function statementNames(): (query: SqlQuery) => string {
  const names = new Map<string, string>()
  return ({ sql }) => {
    let name = names.get(sql)
    if (name === undefined) {
      if (names.size >= MAX_STATEMENT_NAMES) names.clear()
      name = `vg_${createHash('sha256').update(sql).digest('hex').slice(0, 32)}`
      names.set(sql, name)
    }
    return name
  }
}

/** The Prisma driver adapter over a pool (the primary's, a replica's), with the pool settings' prepared statements. */
export function postgresAdapter(pool: pg.Pool, settings: Config['pool']): SqlMigrationAwareDriverAdapterFactory {
  return new PostgresAdapterFactory(pool, settings.preparedStatements !== false ? { statementNameGenerator: statementNames() } : {})
}

/** `pglite`: an already created PGlite to use in embedded mode (tests start from a migrated snapshot). */
export async function openDatabase(
  config: Pick<Config, 'storage' | 'pool'> & Partial<Pick<Config, 'embeddedSharedBuffersMb'>>,
  options: { pglite?: PGlite } = {},
): Promise<Database> {
  let driver: Pick<Database, 'mode' | 'factory' | 'pool' | 'pglite'> & { end(): Promise<void> }
  if (config.storage.mode === 'postgres') {
    const pool = createPool(config.storage.url, config.pool)
    // An idle client that dies (server restart) must not crash the process; the pool replaces it.
    pool.on('error', () => {})
    const factory = postgresAdapter(pool, config.pool)
    driver = { mode: 'postgres', factory, pool, end: () => pool.end() }
  } else {
    const dir = config.storage.dataDir
    if (!options.pglite && !dir.startsWith('memory://')) await mkdir(path.resolve(dir), { recursive: true })
    // PostgreSQL writes all of shared_buffers at start, so its size is resident from the first second.
    const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${config.embeddedSharedBuffersMb ?? 16}MB`]
    const pglite = options.pglite ?? (await PGlite.create(dir.startsWith('memory://') ? dir : path.resolve(dir), { startParams }))
    driver = { mode: 'embedded', factory: new EmbeddedAdapterFactory(pglite), pglite, end: () => pglite.close() }
  }
  const { end, ...rest } = driver
  const client = new PrismaClient({ adapter: observedFactory(driver.factory) })
  let changes: ChangeFeed | undefined
  return {
    ...rest,
    prisma: client,
    get changes() {
      changes ??= createChangeFeed(driver.pglite ? { pglite: driver.pglite } : { connection: { ...driver.pool!.options } })
      return changes
    },
    migrate: () => applyMigrations(driver.factory, () => readApplied(client)),
    ping: async () => {
      await client.$executeRaw`SELECT 1`
    },
    close: async () => {
      await changes?.close()
      await client.$disconnect()
      await end()
    },
  }
}

async function readApplied(client: PrismaClient): Promise<AppliedRow[]> {
  return client.$queryRaw<AppliedRow[]>`
    SELECT migration_name, checksum FROM _prisma_migrations
    WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`
}
