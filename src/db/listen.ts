import type { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { logger } from '../core/log.js'

// PostgreSQL LISTEN for a whole process: ONE dedicated connection (outside the pool) carries every
// channel (key revocations, data changes), reconnects with backoff when it drops, and tells
// subscribers when it is live again, since notifications sent meanwhile are lost and whatever was
// derived from them must be dropped. NOTIFY is delivered on commit, to every session listening on
// the database, so every instance hears every other instance's commits. Embedded, PGlite's own
// listener does the same within the one process.

export interface ChangeFeed {
  /** Calls `handler` with the payload of every notification on `channel`; returns the unsubscribe function. */
  on(channel: string, handler: (payload: string) => void): () => void
  /** Calls `fn(true)` each time the feed listens (again), `fn(false)` when it is lost; at once with the current state. */
  onLive(fn: (live: boolean) => void): () => void
  readonly live: boolean
  /** Resolves once the first attempt to listen has succeeded or failed (it keeps retrying). */
  readonly ready: Promise<void>
  close(): Promise<void>
}

const RETRY_MS = { first: 500, max: 15_000 }

/** Only plain identifiers are LISTENed to (they are spliced into the statement). */
const CHANNEL = /^[a-z_][a-z0-9_]*$/

export function createChangeFeed(source: { pglite?: PGlite; connection?: pg.ClientConfig }): ChangeFeed {
  const handlers = new Map<string, Set<(payload: string) => void>>()
  const liveHandlers = new Set<(live: boolean) => void>()
  let live = false
  const setLive = (value: boolean) => {
    if (live === value) return
    live = value
    for (const fn of liveHandlers) fn(value)
  }
  const dispatch = (channel: string, payload: string) => {
    for (const fn of handlers.get(channel) ?? []) fn(payload)
  }

  let listenTo: (channel: string) => Promise<void>
  let stop: () => Promise<void>
  let ready: Promise<void>
  /** LISTENs issued and not yet confirmed: `ready` waits for them too. */
  const pending = new Set<Promise<void>>()

  if (source.pglite) {
    const db = source.pglite
    const unlisten: Promise<() => Promise<void>>[] = []
    listenTo = async (channel) => {
      const pending = db.listen(channel, (payload) => dispatch(channel, payload))
      unlisten.push(pending)
      await pending
      setLive(true)
    }
    ready = Promise.resolve()
    stop = async () => {
      setLive(false)
      await Promise.all(unlisten.map((p) => p.then((u) => u()).catch(() => {})))
    }
  } else if (source.connection) {
    const connection = source.connection
    let client: pg.Client | undefined
    let connected = false
    let closed = false
    let timer: NodeJS.Timeout | undefined
    let delay = RETRY_MS.first
    ready = Promise.resolve()

    const lost = (c: pg.Client, err?: Error) => {
      if (client !== c) return
      client = undefined
      connected = false
      c.end().catch(() => {})
      if (live) logger.warn({ err: err?.message }, 'LISTEN connection lost; reconnecting (caches derived from notifications are off meanwhile)')
      setLive(false)
      if (closed || timer) return
      timer = setTimeout(() => {
        timer = undefined
        void connect()
      }, delay)
      timer.unref()
      delay = Math.min(delay * 2, RETRY_MS.max)
    }

    const connect = async () => {
      if (closed) return
      // The pool's own settings (server, credentials, TLS) on a connection of its own; keepAlive so
      // that a connection which silently died (a network partition) is noticed and replaced.
      const c = new pg.Client({ ...connection, application_name: 'vaultgate-listen', keepAlive: true })
      client = c
      c.on('error', (err) => lost(c, err))
      c.on('end', () => lost(c))
      c.on('notification', (msg) => dispatch(msg.channel, msg.payload ?? ''))
      try {
        await c.connect()
        for (const channel of handlers.keys()) await c.query(`LISTEN ${channel}`)
        if (client !== c || closed) return
        connected = true
        delay = RETRY_MS.first
        setLive(true)
      } catch (err) {
        if (!closed) logger.warn({ err: (err as Error).message }, 'LISTEN connection cannot connect; retrying')
        lost(c, err as Error)
      }
    }

    listenTo = async (channel) => {
      if (connected && client) await client.query(`LISTEN ${channel}`)
    }
    // Connect on the first subscription: a process that never listens holds no connection.
    let connecting: Promise<void> | undefined
    const listenOnOpen = listenTo
    listenTo = async (channel) => {
      if (!connecting) {
        connecting = connect()
        return connecting
      }
      await connecting
      await listenOnOpen(channel)
    }
    stop = async () => {
      closed = true
      clearTimeout(timer)
      const c = client
      client = undefined
      connected = false
      setLive(false)
      await c?.end().catch(() => {})
    }
  } else {
    listenTo = async () => {}
    ready = Promise.resolve()
    stop = async () => {}
  }

  return {
    on(channel, handler) {
      if (!CHANNEL.test(channel)) throw new Error(`not a channel name: ${channel}`)
      let set = handlers.get(channel)
      if (!set) {
        handlers.set(channel, (set = new Set()))
        const listening = listenTo(channel).catch((err: Error) => logger.warn({ err: err.message, channel }, 'LISTEN failed'))
        pending.add(listening)
        void listening.finally(() => pending.delete(listening))
      }
      set.add(handler)
      return () => set.delete(handler)
    },
    onLive(fn) {
      liveHandlers.add(fn)
      fn(live)
      return () => liveHandlers.delete(fn)
    },
    get live() {
      return live
    },
    get ready() {
      return Promise.all([ready, ...pending]).then(() => {})
    },
    close: stop,
  }
}
