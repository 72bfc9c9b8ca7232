import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory, SqlQuery, SqlQueryable } from '@prisma/driver-adapter-utils'
import type pg from 'pg'
import type { Config } from '../config.js'
import { logger } from '../core/log.js'
import { observeReplicas, replicaReads } from '../core/metrics.js'
import { PrismaClient } from '../generated/prisma/client.js'
import { createPool, type Db, observedFactory, postgresAdapter } from './client.js'

// Read replicas (docs/operations.md "Read replicas", decisions §16). The one rule: a public or
// wallet read (Context.db, src/graphql/context.ts) asks `reader()` for its client once per request
// (once per event for a subscription); every other statement (writes, key management, key
// verification, freshness, webhooks, the chain source) uses the primary's client directly.
// `reader()` answers a replica, round robin, when one is usable:
// - it answered its last health poll, and everything the primary had committed by
//   REPLICA_MAX_LAG_MS ago is replayed on it (measured against LSNs sampled on the primary, so an
//   idle primary does not look like lag);
// - it has replayed past the newest change this instance knows of (its own imports, change
//   notifications): read your writes, so the response cache never refills with older data.
// Otherwise the primary. A statement a replica fails to answer (down, restarting, a recovery
// conflict, or no answer within REPLICA_TIMEOUT_MS: a partition) is run again on the primary and
// the replica is skipped until a poll finds it well. Replica sessions are read only
// (default_transaction_read_only): nothing is written to a replica, even by mistake.
//
// Prisma's @prisma/extension-read-replicas was the starting point, but it routes by model
// operation (raw SQL, which most stores use, stays on the primary), picks replicas at random with
// no health, lag or retry, and cannot hold reads on the primary after a write: so routing is
// explicit here, one PrismaClient (own pool, same settings) per replica.

export type ReplicaState = 'up' | 'lagging' | 'down'

/** One replica as /readyz shows it (`name`: host:port, never credentials). */
export interface ReplicaStatus {
  name: string
  state: ReplicaState
  /** How far behind the primary its data may be (0: it had replayed all the primary had); null before the first poll. */
  lag_ms: number | null
  /** pg_last_wal_replay_lsn() at the last poll. */
  replay_lsn: string | null
  /** pg_last_xact_replay_timestamp(): the commit time of the last transaction it replayed. */
  last_replay_at_ms: number | null
  /** Why it is down (the last error), absent otherwise. */
  error?: string
}

export interface ReadRouting {
  /** The client for one public or wallet read: a usable replica (round robin) or the primary. */
  reader(): Db
  /**
   * A change was committed on the primary (an import this instance answered, a change notification):
   * reads stay on the primary until a replica has replayed the primary's position as of now.
   */
  changed(): void
  /** Replica states for /readyz (empty without replicas). */
  status(): ReplicaStatus[]
  /** Resolves after the first health poll (replicas are not used before it; readiness does not wait for it). */
  readonly ready: Promise<void>
  close(): Promise<void>
}

/** Primary LSN samples kept: enough to date a replica's position back past REPLICA_MAX_LAG_MS. */
const SAMPLES = 64

interface Replica {
  name: string
  pool: pg.Pool
  client: PrismaClient
  state: ReplicaState
  replayLsn: bigint | null
  replayLsnText: string | null
  lastReplayAt: Date | null
  /** Everything the primary had committed at this time is on the replica (from the samples). */
  caughtUpAt: number | null
  lagMs: number | null
  error?: string
  /** Its health query still running (a replica cut off answers nothing): the next poll leaves it. */
  checking?: Promise<void>
}

/** `0/16B3748` → a number (LSNs compare as 64-bit integers). */
export function parseLsn(text: string): bigint {
  const [hi, lo] = text.split('/')
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`)
}

/**
 * Errors after which the statement is worth running on the primary: the replica cannot be reached
 * or is going away (connection, shutdown, start-up, too many clients), or cancelled it for a
 * recovery conflict (40001). A statement error (bad input, constraint, a write: 25006) is the
 * statement's own and would fail on the primary too, or must not be written anywhere.
 */
export function replicaTrouble(e: unknown): boolean {
  const err = e as { name?: string; cause?: { kind?: string; code?: string; originalCode?: string } } | null
  if (err?.name !== 'DriverAdapterError' || typeof err.cause !== 'object') return true // socket or pool errors pg throws as they are
  const { kind, code, originalCode } = err.cause
  if (kind !== 'postgres')
    return (
      kind !== undefined &&
      ![
        'UniqueConstraintViolation',
        'NullConstraintViolation',
        'ForeignKeyConstraintViolation',
        'InvalidInputValue',
        'ValueOutOfRange',
        'LengthMismatch',
        'TableDoesNotExist',
        'ColumnNotFound',
        'RestrictViolation',
      ].includes(kind)
    )
  const sqlState = code ?? originalCode ?? ''
  return sqlState.startsWith('08') || sqlState.startsWith('53') || sqlState === '57P01' || sqlState === '57P02' || sqlState === '57P03' || sqlState === '40001'
}

/**
 * The factory of a replica's client: statements go to the replica, and one it fails to answer is
 * run on the primary (`onTrouble` marks the replica down), so a reader sees no error for it.
 */
function fallbackFactory(
  replica: SqlMigrationAwareDriverAdapterFactory,
  primary: SqlMigrationAwareDriverAdapterFactory,
  onTrouble: (e: unknown) => void,
): SqlMigrationAwareDriverAdapterFactory {
  return {
    provider: replica.provider,
    adapterName: replica.adapterName,
    connectToShadowDb: () => replica.connectToShadowDb(),
    connect: async () => {
      const adapter = await replica.connect()
      let primaryAdapter: Promise<SqlDriverAdapter> | undefined
      const onPrimary = () => (primaryAdapter ??= primary.connect())
      const retry =
        <R>(run: (q: SqlQuery) => Promise<R>, again: (a: SqlQueryable, q: SqlQuery) => Promise<R>) =>
        async (q: SqlQuery): Promise<R> => {
          try {
            return await run(q)
          } catch (e) {
            if (!replicaTrouble(e)) throw e
            onTrouble(e)
            replicaReads.inc({ target: 'primary_retry' })
            return again(await onPrimary(), q)
          }
        }
      adapter.queryRaw = retry(adapter.queryRaw.bind(adapter), (a, q) => a.queryRaw(q))
      adapter.executeRaw = retry(adapter.executeRaw.bind(adapter), (a, q) => a.executeRaw(q))
      const startTransaction = adapter.startTransaction.bind(adapter)
      adapter.startTransaction = async (isolationLevel) => {
        try {
          return await startTransaction(isolationLevel)
        } catch (e) {
          if (!replicaTrouble(e)) throw e
          onTrouble(e)
          return (await onPrimary()).startTransaction(isolationLevel)
        }
      }
      return adapter
    },
  }
}

/**
 * A replica's pool: the primary's settings, but read-only sessions, and REPLICA_TIMEOUT_MS as the
 * most a connection attempt or a statement may wait for the replica (pg's connect timeout and
 * query_timeout, measured by the client: in a partition the server's statement_timeout never
 * arrives). The primary's own limits run up to the request's deadline (Config.pool.queryTimeoutMs),
 * which would leave no time to run the read again on the primary.
 */
export function createReplicaPool(url: string, config: Pick<Config, 'replicas' | 'pool'>): pg.Pool {
  const { timeoutMs } = config.replicas
  return createPool(
    url,
    { ...config.pool, connectTimeoutMs: Math.min(config.pool.connectTimeoutMs, timeoutMs), queryTimeoutMs: timeoutMs },
    'vaultgate-replica',
    { readOnly: true },
  )
}

function nameOf(url: string, taken: Set<string>): string {
  let name: string
  try {
    const u = new URL(url)
    name = `${u.hostname}:${u.port || '5432'}`
  } catch {
    name = 'replica'
  }
  let unique = name
  for (let i = 2; taken.has(unique); i++) unique = `${name}#${i}`
  taken.add(unique)
  return unique
}

/**
 * `primary`: the primary's client, pool and adapter factory (src/db/client.ts openDatabase);
 * without replicas (or embedded) `reader()` is always the primary and nothing is polled.
 */
export function createReadRouting({
  primary,
  config,
  pollMs = Math.max(25, Math.min(1000, Math.floor(config.replicas.maxLagMs / 4))),
}: {
  primary: { prisma: PrismaClient; pool?: pg.Pool; factory: SqlMigrationAwareDriverAdapterFactory }
  config: Pick<Config, 'replicas' | 'pool'>
  /** How often replicas and the primary are asked their positions (a quarter of REPLICA_MAX_LAG_MS, at most 1 s). */
  pollMs?: number
}): ReadRouting {
  const maxLagMs = config.replicas.maxLagMs
  const primaryPool = primary.pool
  if (!primaryPool || config.replicas.urls.length === 0) {
    return { reader: () => primary.prisma, changed: () => {}, status: () => [], ready: Promise.resolve(), close: async () => {} }
  }
  const taken = new Set<string>()
  const replicas: Replica[] = config.replicas.urls.map((url) => {
    const pool = createReplicaPool(url, config)
    pool.on('error', () => {})
    const adapter = postgresAdapter(pool, config.pool)
    const replica: Replica = {
      name: nameOf(url, taken),
      pool,
      client: undefined as unknown as PrismaClient,
      state: 'down',
      replayLsn: null,
      replayLsnText: null,
      lastReplayAt: null,
      caughtUpAt: null,
      lagMs: null,
      error: 'not checked yet',
    }
    replica.client = new PrismaClient({ adapter: observedFactory(fallbackFactory(adapter, primary.factory, (e) => markDown(replica, e))) })
    return replica
  })

  const markDown = (r: Replica, e: unknown) => {
    const message = e instanceof Error ? e.message : String(e)
    if (r.state !== 'down') logger.warn({ replica: r.name, err: message }, 'read replica failed: reads go elsewhere until it recovers')
    r.state = 'down'
    r.error = message
  }

  // Primary positions with the time they were read, oldest first.
  const samples: { lsn: bigint; at: number }[] = []
  // Read your writes: no replica is used until it has replayed `barrier`; while a change's position
  // is being read (`pending`) or could not be read (`awaitSample`), none is.
  let barrier = 0n
  let pending = 0
  let awaitSample = false
  let next = 0
  let closed = false

  const raise = (lsn: bigint) => {
    if (lsn > barrier) barrier = lsn
  }

  const usable = (r: Replica, now: number) =>
    r.state === 'up' && r.replayLsn !== null && r.replayLsn >= barrier && r.caughtUpAt !== null && now - r.caughtUpAt <= maxLagMs

  const reader = (): Db => {
    if (pending === 0 && !awaitSample) {
      const now = Date.now()
      for (let i = 0; i < replicas.length; i++) {
        const r = replicas[next++ % replicas.length]!
        if (usable(r, now)) {
          replicaReads.inc({ target: 'replica' })
          return r.client
        }
      }
    }
    replicaReads.inc({ target: 'primary' })
    return primary.prisma
  }

  const checkReplica = async (r: Replica, primaryLsn: bigint | null, sampledAt: number) => {
    // A replica that does not answer within REPLICA_TIMEOUT_MS is down; its query is left to
    // finish on its own (query_timeout) while the other servers go on being polled.
    if (r.checking) return markDown(r, new Error('the health query has not answered'))
    let timer: NodeJS.Timeout | undefined
    const check = readReplica(r, primaryLsn, sampledAt).finally(() => {
      clearTimeout(timer)
      r.checking = undefined
    })
    r.checking = check
    await Promise.race([
      check,
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          markDown(r, new Error(`no answer to the health query within ${config.replicas.timeoutMs} ms`))
          resolve()
        }, config.replicas.timeoutMs)
      }),
    ])
  }

  const readReplica = async (r: Replica, primaryLsn: bigint | null, sampledAt: number) => {
    try {
      const { rows } = await r.pool.query<{ lsn: string | null; ts: Date | null; standby: boolean }>(
        'SELECT pg_last_wal_replay_lsn()::text AS lsn, pg_last_xact_replay_timestamp() AS ts, pg_is_in_recovery() AS standby',
      )
      const row = rows[0]!
      // A promoted (or misconfigured) server takes writes of its own: reading it could show data the
      // primary never had.
      if (!row.standby || row.lsn === null) throw new Error('not a streaming standby (pg_is_in_recovery() is false)')
      const lsn = parseLsn(row.lsn)
      r.replayLsn = lsn
      r.replayLsnText = row.lsn
      r.lastReplayAt = row.ts
      if (primaryLsn !== null && lsn >= primaryLsn) {
        r.caughtUpAt = sampledAt
        r.lagMs = 0
      } else {
        // The newest primary sample it had reached; none in the window: at least as old as the oldest.
        let at: number | null = null
        for (const s of samples) if (s.lsn <= lsn) at = s.at
        if (at !== null) r.caughtUpAt = Math.max(r.caughtUpAt ?? at, at)
        else if (samples.length > 0) r.caughtUpAt = Math.min(r.caughtUpAt ?? samples[0]!.at, samples[0]!.at - 1)
        r.lagMs = r.caughtUpAt === null ? null : Math.max(0, Date.now() - r.caughtUpAt)
      }
      const was = r.state
      r.state = r.lagMs !== null && r.lagMs <= maxLagMs ? 'up' : 'lagging'
      r.error = undefined
      if (was !== r.state) logger.info({ replica: r.name, state: r.state, lagMs: r.lagMs }, 'read replica state')
    } catch (e) {
      markDown(r, e)
    }
  }

  /**
   * Where the primary is. `flushed` (pg_current_wal_flush_lsn()): what a replica can have received,
   * the measure of lag (the insert position runs ahead of it by records no commit has flushed yet,
   * a SELECT's page pruning for one, which an idle primary may never send: a replica would look
   * ever more behind). `committed`: a position past every commit already answered, the
   * read-your-writes barrier: the flushed one, since a commit returns (and notifies) only once
   * flushed, unless the gateway's sessions commit asynchronously (synchronous_commit=off), where
   * the insert position is the safe one (reads may then stay on the primary until the next flush).
   */
  const primaryPosition = async () => {
    const { rows } = await primaryPool.query<{ flushed: string; inserted: string; sync: string }>(
      "SELECT pg_current_wal_flush_lsn()::text AS flushed, pg_current_wal_insert_lsn()::text AS inserted, current_setting('synchronous_commit') AS sync",
    )
    const row = rows[0]!
    const flushed = parseLsn(row.flushed)
    return { flushed, committed: row.sync === 'off' ? parseLsn(row.inserted) : flushed }
  }

  let polling: Promise<void> | undefined
  const pollOnce = async () => {
    let primaryLsn: bigint | null = null
    const sampledAt = Date.now()
    try {
      const position = await primaryPosition()
      primaryLsn = position.flushed
      samples.push({ lsn: primaryLsn, at: sampledAt })
      if (samples.length > SAMPLES) samples.shift()
      if (awaitSample) {
        raise(position.committed)
        awaitSample = false
      }
    } catch {
      // The primary is away: replicas are dated against the samples already taken, and age out.
    }
    await Promise.all(replicas.map((r) => checkReplica(r, primaryLsn, sampledAt)))
  }
  const poll = () => (polling ??= pollOnce().finally(() => (polling = undefined)))
  const ready = poll()
  const timer = setInterval(() => void poll(), pollMs)
  timer.unref()

  observeReplicas(() => replicas.map((r) => ({ name: r.name, usable: usable(r, Date.now()), lagSeconds: r.lagMs === null ? null : r.lagMs / 1000 })))

  return {
    reader,
    changed() {
      pending++
      primaryPosition()
        .then(
          (position) => raise(position.committed),
          () => {
            awaitSample = true
          },
        )
        .finally(() => {
          pending--
          // Back to the replicas as soon as one has replayed it, not a poll later.
          if (!closed) void poll()
        })
    },
    status: () =>
      replicas.map((r) => ({
        name: r.name,
        state: r.state,
        lag_ms: r.lagMs,
        replay_lsn: r.replayLsnText,
        last_replay_at_ms: r.lastReplayAt?.getTime() ?? null,
        ...(r.error !== undefined && r.state === 'down' ? { error: r.error } : {}),
      })),
    ready,
    close: async () => {
      closed = true
      clearInterval(timer)
      observeReplicas(undefined)
      await polling
      await Promise.all(
        replicas.map(async (r) => {
          await r.client.$disconnect()
          await r.pool.end()
        }),
      )
    },
  }
}
