import pg from 'pg'
import { logger } from '../core/log.js'
import { KEY_CHANNEL, parseKeyNotification, PROCESS_ORIGIN } from './changes.js'

export interface KeyChangeListener {
  /** Resolves after the first attempt to LISTEN, successful or not. */
  ready: Promise<void>
  readonly listening: boolean
  close(): Promise<void>
}

const MIN_RETRY_MS = 500
const MAX_RETRY_MS = 15_000

/**
 * Holds one dedicated PostgreSQL connection that LISTENs on the key channel and calls `onWallet`
 * for every notification. When the connection drops it reconnects with backoff, and calls
 * `onReset` once listening again: notifications sent meanwhile are lost, so cached state is too.
 */
export function listenForKeyChanges(
  connection: pg.ClientConfig,
  handlers: { onWallet(wallet: string): void; onReset(): void },
  /** Skip notifications sent by this process (its verifiers learn of its commits directly). */
  skipOwn = false,
): KeyChangeListener {
  let client: pg.Client | undefined
  let closed = false
  let listening = false
  let retryMs = MIN_RETRY_MS
  let timer: NodeJS.Timeout | undefined
  let markReady: () => void = () => {}
  const ready = new Promise<void>((resolve) => (markReady = resolve))

  const retry = () => {
    if (closed || timer) return
    timer = setTimeout(() => {
      timer = undefined
      void connect()
    }, retryMs)
    timer.unref()
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS)
  }

  const lost = (c: pg.Client, err?: Error) => {
    if (client !== c) return
    client = undefined
    if (listening) logger.warn({ err }, 'key-change listener lost its connection; reconnecting (cached key state expires within 30 s meanwhile)')
    listening = false
    c.end().catch(() => {})
    retry()
  }

  async function connect() {
    if (closed) return
    // keepAlive: a connection that silently died (network partition) is noticed and replaced.
    const c = new pg.Client({ ...connection, application_name: 'vaultgate-listen', keepAlive: true })
    client = c
    c.on('error', (err) => lost(c, err))
    c.on('end', () => lost(c))
    c.on('notification', (msg) => {
      if (msg.channel !== KEY_CHANNEL || !msg.payload) return
      const { wallet, origin } = parseKeyNotification(msg.payload)
      if (!(skipOwn && origin === PROCESS_ORIGIN)) handlers.onWallet(wallet)
    })
    try {
      await c.connect()
      await c.query(`LISTEN ${KEY_CHANNEL}`)
      if (client !== c || closed) return
      listening = true
      retryMs = MIN_RETRY_MS
      handlers.onReset()
    } catch (err) {
      if (!closed) logger.warn({ err }, 'key-change listener cannot connect; retrying')
      lost(c, err as Error)
    } finally {
      markReady()
    }
  }

  void connect()
  return {
    ready,
    get listening() {
      return listening
    },
    async close() {
      closed = true
      if (timer) clearTimeout(timer)
      const c = client
      client = undefined
      listening = false
      await c?.end().catch(() => {})
    },
  }
}
