import pg from 'pg'

// Work that must run on one instance at a time (the chain source's follower): a PostgreSQL
// session-level advisory lock, held on a connection of its own (outside the pool, like the LISTEN
// connection of src/db/listen.ts). The lock lives exactly as long as that session: when the
// holding process dies, its connection closes and PostgreSQL releases the lock at once, and the
// instances waiting for it try again every `retryMs`, so one of them takes over within that time.
// The holder checks its session at the same pace (keepAlive catches a connection that silently
// died), and stops the work the moment the session is gone: another instance may hold it by then.

export interface SessionLockOptions {
  /** The database, as the pool connects to it (server, credentials, TLS). */
  connection: pg.ClientConfig
  /** pg_advisory_lock's int8 key; one per kind of work. */
  key: bigint
  /** Shown in pg_stat_activity. */
  applicationName: string
  /** How often a waiting instance asks for the lock and the holder checks its session. */
  retryMs?: number
  /** The lock is held: start the work. */
  onAcquired(): void
  /** The lock's session is gone: stop the work (awaited before the lock is asked for again). */
  onLost(reason: string): void | Promise<void>
  /** A failure to connect or ask (the lock is asked for again later). */
  onError?(error: Error): void
}

export interface SessionLock {
  readonly held: boolean
  /** Stops asking; releases the lock (ends the session) without calling onLost. */
  close(): Promise<void>
}

export const DEFAULT_LOCK_RETRY_MS = 10_000

export function holdSessionLock(options: SessionLockOptions): SessionLock {
  const retryMs = options.retryMs ?? DEFAULT_LOCK_RETRY_MS
  let client: pg.Client | undefined
  let held = false
  let closed = false
  let wake: () => void = () => {}

  const drop = async (reason: string) => {
    const c = client
    client = undefined
    c?.end().catch(() => {})
    if (held) {
      held = false
      await options.onLost(reason)
    }
  }

  const loop = (async () => {
    while (!closed) {
      try {
        if (!client) {
          // A query that hangs (a network partition) fails after retryMs instead of forever.
          const c = new pg.Client({ ...options.connection, application_name: options.applicationName, keepAlive: true, query_timeout: retryMs })
          c.on('error', (e) => {
            if (client === c) void drop(`the lock's connection failed: ${e.message}`)
          })
          c.on('end', () => {
            if (client === c) void drop("the lock's connection closed")
          })
          client = c
          await c.connect()
        }
        if (!held) {
          const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [options.key.toString()])
          if (rows[0]?.ok && !closed) {
            held = true
            options.onAcquired()
          }
        } else await client.query('SELECT 1')
      } catch (e) {
        if (!closed) options.onError?.(e as Error)
        await drop(`the lock's connection failed: ${(e as Error).message}`)
      }
      if (closed) break
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, retryMs)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  })()

  return {
    get held() {
      return held
    },
    close: async () => {
      closed = true
      wake()
      await loop
      held = false
      const c = client
      client = undefined
      await c?.end().catch(() => {})
    },
  }
}
