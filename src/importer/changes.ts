import pg from 'pg'
import type { Database, Db } from '../db/client.js'
import { logger } from '../core/log.js'

// Imports announce themselves on a PostgreSQL channel (NOTIFY is delivered on commit, to every
// session listening on the database), so every gateway process and instance can drop what it
// derived from the old data: the response cache today.

export const DATA_CHANGED_CHANNEL = 'vaultgate_data_changed'

/** Call inside the writing transaction: listeners hear it when (and only if) it commits. */
export async function announceDataChange(tx: Pick<Db, '$executeRawUnsafe'>): Promise<void> {
  await tx.$executeRawUnsafe(`NOTIFY ${DATA_CHANGED_CHANNEL}`)
}

export interface DataChangeHandlers {
  onChange(): void
  /** True once listening (again), false when the feed is lost and changes could be missed. */
  onLive(live: boolean): void
}

const RETRY_MS = { first: 500, max: 30_000 }

/**
 * Listens on the channel until the returned stop function is called. PostgreSQL: a dedicated
 * connection outside the pool, reconnected with backoff. Embedded: PGlite's own listener.
 */
export interface DataChangeFeed {
  /** Resolves once the first attempt to listen has succeeded or failed. */
  ready: Promise<void>
  stop(): Promise<void>
}

export function watchDataChanges(db: Pick<Database, 'pglite' | 'pool'>, handlers: DataChangeHandlers): DataChangeFeed {
  if (db.pglite) {
    const unlisten = db.pglite.listen(DATA_CHANGED_CHANNEL, () => handlers.onChange()).then((stop) => {
      handlers.onLive(true)
      return stop
    })
    return {
      ready: unlisten.then(() => {}, () => {}),
      stop: async () => {
        handlers.onLive(false)
        await (await unlisten.catch(() => undefined))?.().catch(() => {})
      },
    }
  }
  const pool = db.pool
  if (!pool) return { ready: Promise.resolve(), stop: async () => {} }
  let firstAttempt: () => void = () => {}
  const ready = new Promise<void>((resolve) => (firstAttempt = resolve))
  let stopped = false
  let client: pg.Client | undefined
  let timer: NodeJS.Timeout | undefined
  let delay = RETRY_MS.first
  const connect = async () => {
    // The pool's own settings (server, credentials, TLS), on a connection of its own.
    const c = new pg.Client({ ...pool.options, application_name: 'vaultgate-listen' })
    client = c
    const lost = (e?: Error) => {
      if (client !== c) return
      client = undefined
      handlers.onLive(false)
      c.end().catch(() => {})
      if (stopped) return
      logger.warn({ err: e?.message }, 'data-change feed lost; response cache off until it reconnects')
      timer = setTimeout(() => void connect(), delay)
      delay = Math.min(delay * 2, RETRY_MS.max)
    }
    c.on('error', lost)
    c.on('end', () => lost())
    c.on('notification', () => handlers.onChange())
    try {
      await c.connect()
      await c.query(`LISTEN ${DATA_CHANGED_CHANNEL}`)
      if (stopped || client !== c) return
      delay = RETRY_MS.first
      handlers.onLive(true)
    } catch (e) {
      lost(e as Error)
    } finally {
      firstAttempt()
    }
  }
  void connect()
  return {
    ready,
    stop: async () => {
      stopped = true
      clearTimeout(timer)
      const c = client
      client = undefined
      handlers.onLive(false)
      await c?.end().catch(() => {})
    },
  }
}
