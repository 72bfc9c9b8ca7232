import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'

// WebSocket clients for tests: graphql-ws' own client (what dashboards and Apollo's GraphQLWsLink
// use), and a raw socket speaking the protocol's messages by hand for the refusals.

/** graphql-ws' client on `base` (http://…), never retrying: a close is the answer under test. */
export function wsClient(base: string, connectionParams?: Record<string, unknown>, headers: Record<string, string> = {}): Client {
  class WithHeaders extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { headers })
    }
  }
  return createClient({ url: `${base.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WithHeaders, connectionParams, retryAttempts: 0, lazy: true })
}

export interface WsSubscription {
  /** Results received and not yet taken by next(). */
  readonly buffered: unknown[]
  /** The next result; rejects when none arrives within `ms`. */
  next(ms?: number): Promise<any>
  /** Resolves with the error (GraphQL errors, or the CloseEvent) or undefined when it completed. */
  readonly ended: Promise<unknown>
  /** The client unsubscribes. */
  close(): void
}

export function wsSubscribe(client: Client, query: string, variables: Record<string, unknown> = {}): WsSubscription {
  const buffered: unknown[] = []
  let wake: (() => void) | undefined
  let endedResolve!: (e: unknown) => void
  const ended = new Promise<unknown>((r) => (endedResolve = r))
  let done = false
  const close = client.subscribe(
    { query, variables },
    {
      next: (value) => {
        buffered.push(value)
        wake?.()
      },
      error: (e) => {
        done = true
        endedResolve(e)
        wake?.()
      },
      complete: () => {
        done = true
        endedResolve(undefined)
        wake?.()
      },
    },
  )
  return {
    buffered,
    ended,
    close,
    async next(ms = 2000) {
      const until = Date.now() + ms
      while (buffered.length === 0) {
        if (done) throw new Error('the subscription ended')
        const left = until - Date.now()
        if (left <= 0) throw new Error(`no result within ${ms} ms`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
      return buffered.shift()
    },
  }
}

export interface RawSocket {
  socket: WebSocket
  /** Parsed messages received so far. */
  messages: any[]
  /** WebSocket ping frames received so far (answered with pongs unless `autoPong: false`). */
  readonly pings: number
  /** Resolves once open (rejects with the HTTP refusal's status). */
  opened: Promise<void>
  /** The close code and reason, once closed. */
  closed: Promise<{ code: number; reason: string }>
  send(message: unknown): void
  /** The next message (waits up to `ms`). */
  message(ms?: number): Promise<any>
}

export function rawSocket(
  base: string,
  protocol: string | undefined = 'graphql-transport-ws',
  headers: Record<string, string> = {},
  { autoPong = true }: { autoPong?: boolean } = {},
): RawSocket {
  const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/graphql`, protocol ? [protocol] : [], { headers, autoPong })
  const messages: any[] = []
  let pings = 0
  socket.on('ping', () => pings++)
  let wake: (() => void) | undefined
  socket.on('message', (data) => {
    messages.push(JSON.parse(String(data)))
    wake?.()
  })
  socket.on('error', () => {})
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c))
      res.on('end', () => reject(new Error(`HTTP ${res.statusCode} ${body}`)))
    })
  })
  opened.catch(() => {})
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })))
  let taken = 0
  return {
    socket,
    messages,
    get pings() {
      return pings
    },
    opened,
    closed,
    send: (message) => socket.send(typeof message === 'string' ? message : JSON.stringify(message)),
    async message(ms = 2000) {
      const until = Date.now() + ms
      while (messages.length <= taken) {
        const left = until - Date.now()
        if (left <= 0) throw new Error(`no message within ${ms} ms`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
      return messages[taken++]
    },
  }
}
