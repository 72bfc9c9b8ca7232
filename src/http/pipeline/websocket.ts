import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { type ExecutionArgs, getOperationAST, type GraphQLError } from 'graphql'
import { CloseCode, type Context as WsContext, GRAPHQL_TRANSPORT_WS_PROTOCOL, handleProtocols, makeServer } from 'graphql-ws'
import { createGraphQLError } from 'graphql-yoga'
import { type WebSocket, WebSocketServer } from 'ws'
import type { Config } from '../../config.js'
import { AppError, asAppError, badRequest, isGraphQLError, quoted } from '../../core/errors.js'
import { logger } from '../../core/log.js'
import type { RateLimits } from '../../core/rate-limit.js'
import type { Context } from '../../graphql/context.js'
import { maskError } from '../../graphql/errors.js'
import { WEBSOCKET_REFUSAL } from '../../graphql/protection.js'
import { formatResult, withoutHttpHints } from '../../graphql/sse.js'
import type { Yoga } from '../../graphql/yoga.js'
import { clientIdOf } from '../middleware/rate-limit.js'
import type { EventStreams, Place } from './streams.js'

// Subscriptions over WebSocket (docs/push.md, decisions §15): the `graphql-transport-ws` protocol
// (the graphql-ws library's server) on /graphql. This is the WebSocket transport of the one /graphql
// endpoint, not a second door for requests: it serves subscriptions only (queries and mutations go
// through the pipeline by HTTP, with its cache, headers and limits), identifies the client as the
// pipeline does (clientIdOf), counts the upgrade and each subscription in the client's public rate
// limit, and holds each subscription in a place of the same `eventStreams` as SSE (SUBSCRIPTIONS_MAX,
// SUBSCRIPTIONS_PER_IP counted together). The GraphQL side is Yoga's own (`yoga.getEnveloped`: the
// same parse and validation caches, graphql-armor limits, cost limit, masking and context factory).
//
// The wallet session comes from `connection_init`'s `payload.authorization` ("Bearer <token>", as
// the HTTP header; `payload["x-service-wallet"]` as that header): each operation's context is built
// from a Request carrying them, so src/auth/viewer.ts decides as for HTTP. A token that is present
// is checked at once: refused, the socket closes with 4403 (4429 past the wrong-token budget);
// without key management (or its JWKS) the connection stands and only apiKeyChanged is refused. The
// token travels in a message, not in a cookie, so a cross-site page cannot ride a browser's
// credentials; the upgrade's Origin still reaches the key-management origin rule.
//
// The glue between `ws` and graphql-ws is written here rather than taken from graphql-ws/use/ws:
// that one logs every socket error with console.error and its stack, a client's oversized frame
// included, and closes on its own internal errors with 4500.

/** ws' limit on a close frame's reason. */
const MAX_REASON_BYTES = 123

/** Close codes beside graphql-ws' own (RFC 6455 §7.4.1, IANA registry). */
const GOING_AWAY = 1001
const INTERNAL_ERROR = 1011

/** What node:http hands over for a `graphql-transport-ws` upgrade of /graphql (src/server.ts). */
export function isGraphqlWebSocket(req: IncomingMessage): boolean {
  if (req.method !== 'GET' || req.headers.upgrade?.toLowerCase() !== 'websocket') return false
  const path = (req.url ?? '').split('?')[0]
  return path === '/graphql' && handleProtocols(req.headers['sec-websocket-protocol'] ?? '') === GRAPHQL_TRANSPORT_WS_PROTOCOL
}

export interface GraphqlWebSockets {
  /** node:http's 'upgrade' event. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void
  /** Sockets open now. */
  readonly sockets: number
  /** Refuses new sockets from now on and closes every open one with 1001 (going away). */
  close(): void
  /** Cuts the sockets still open (their peers never answered the close). */
  terminate(): void
}

/** What one socket's operations share. */
interface Connection {
  client: string
  /** The upgrade's Origin and User-Agent, then connection_init's authorization: what each operation's context reads. */
  headers: Headers
  url: string
  /** Aborted when the socket closes: each operation's `signal`. */
  gone: AbortController
  places: Map<string, Place>
}

type Extra = { socket: WebSocket; connection: Connection }
type Ctx = WsContext<Record<string, unknown> | undefined, Extra>

/** The reason of a close frame: the sentence when it fits, else the protocol's word for it. */
const reasonOf = (message: string, fallback: string) => (Buffer.byteLength(message) <= MAX_REASON_BYTES ? message : fallback)

/**
 * Errors as graphql-ws sends them: masked, without HTTP hints, and made by Yoga's copy of graphql
 * (graphql-ws checks `instanceof GraphQLError`; graphql 16 ships two builds, and a runner may load both).
 */
function wsErrors(errors: readonly unknown[]): GraphQLError[] {
  return errors.map((e) => {
    const masked = asAppError(e) ?? maskError(e)
    const json = isGraphQLError(masked) ? masked.toJSON() : { message: masked.message, extensions: { code: 'internal' } }
    return createGraphQLError(json.message, { extensions: withoutHttpHints(json.extensions) })
  })
}

export function graphqlWebSockets({
  config,
  yoga,
  streams,
  limits,
  refuse,
}: {
  config: Pick<Config, 'trustProxyHops' | 'ipv6Prefix' | 'requests' | 'subscriptions' | 'cors'>
  yoga: Yoga
  streams: EventStreams
  limits: RateLimits
  /** An upgrade not taken: its error answered through the pipeline's `finish` (src/http/pipeline/index.ts). */
  refuse: (req: IncomingMessage, socket: Duplex, error: AppError) => void
}): GraphqlWebSockets {
  // A subscribe message is the body of a request: REQUEST_BODY_LIMIT_BYTES bounds it (1009 beyond).
  const wss = new WebSocketServer({ noServer: true, maxPayload: config.requests.bodyLimitBytes, perMessageDeflate: false, handleProtocols })
  let closed = false

  const enveloped = (c: Connection, params?: unknown) =>
    yoga.getEnveloped({ request: new Request(c.url, { headers: c.headers, signal: c.gone.signal }), requestId: randomUUID(), client: c.client, params })

  const server = makeServer<Record<string, unknown> | undefined, Extra>({
    // Within REQUEST_TIMEOUT_MS of the upgrade, connection_init (else 4408).
    connectionInitWaitTimeout: config.requests.timeoutMs,
    onConnect: async (ctx) => {
      const { socket, connection: c } = ctx.extra
      const payload = ctx.connectionParams ?? {}
      for (const name of ['authorization', 'x-service-wallet']) {
        const value = payload[name]
        if (value === undefined || value === null) continue
        if (typeof value !== 'string') {
          socket.close(CloseCode.BadRequest, `connection_init payload.${name} must be a string.`)
          return false
        }
        c.headers.set(name, value)
      }
      if (!c.headers.has('authorization')) return true
      try {
        await ((await enveloped(c).contextFactory()) as unknown as Context).viewer()
        return true
      } catch (e) {
        const error = asAppError(e)
        if (!error) logger.warn({ err: e }, 'checking a WebSocket connection_init token failed')
        // Key management not configured, or the JWKS unreachable: not the client's doing, and a
        // token is no reason to refuse public subscriptions; apiKeyChanged answers as over HTTP.
        if (error?.code === 'unavailable') return true
        if (error?.code === 'rate_limited') socket.close(CloseCode.TooManyInitialisationRequests, reasonOf(error.message, 'Too many wrong tokens'))
        else if (!error || error.code === 'internal') socket.close(INTERNAL_ERROR, 'Internal error')
        else socket.close(CloseCode.Forbidden, reasonOf(error.message, 'Forbidden'))
        return false
      }
    },
    onSubscribe: async (ctx, id, payload) => {
      const c = ctx.extra.connection
      try {
        const { schema, parse, validate, contextFactory, execute, subscribe } = enveloped(c, payload)
        const document = parse(payload.query)
        const invalid = validate(schema, document)
        if (invalid.length > 0) return wsErrors(invalid)
        const operation = getOperationAST(document, payload.operationName)
        if (!operation) return wsErrors([badRequest('The document has several operations: name the one to run (operationName).')])
        if (operation.operation !== 'subscription')
          return wsErrors([badRequest(`Over WebSocket, /graphql serves subscriptions; send a ${operation.operation} by POST /graphql.`)])
        const contextValue = await contextFactory()
        // One subscription, one request of the client's public count and one place (as over SSE).
        await limits.consume('public', c.client)
        const place = streams.admit(c.client)
        // The socket closed meanwhile (its places were released): nothing may be left held.
        if (c.gone.signal.aborted) {
          place.release()
          return wsErrors([new AppError('unavailable', 'The connection closed.')])
        }
        c.places.set(id, place)
        return {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue,
          rootValue: { execute, subscribe },
        } as ExecutionArgs
      } catch (e) {
        return wsErrors([e])
      }
    },
    execute: (args) => (args.rootValue as { execute: (a: ExecutionArgs) => never }).execute(args),
    subscribe: (args) => (args.rootValue as { subscribe: (a: ExecutionArgs) => never }).subscribe(args),
    onNext: (_ctx, _id, _payload, _args, result) => formatResult(result),
    onError: (_ctx, _id, _payload, errors) => wsErrors(errors).map((e) => e.toJSON()),
    onComplete: (ctx, id) => {
      const c = ctx.extra.connection
      c.places.get(id)?.release()
      c.places.delete(id)
    },
    onClose: (ctx: Ctx) => {
      const c = ctx.extra.connection
      for (const place of c.places.values()) place.release()
      c.places.clear()
      c.gone.abort()
    },
  })

  wss.on('connection', (socket: WebSocket, _req: IncomingMessage, connection: Connection) => {
    // A frame over maxPayload (ws closes with 1009), a malformed frame (1002), a reset: the
    // client's doing, closed by ws itself; nothing to report but the fact.
    socket.on('error', (err: Error & { code?: string }) => logger.debug({ code: err.code, client: connection.client }, 'WebSocket closed on a protocol error'))
    // Keep-alive: a ping every SUBSCRIPTION_HEARTBEAT_MS (proxies keep the socket; browsers answer
    // pongs themselves); a peer that has not answered the previous one by then is gone.
    let alive = true
    socket.on('pong', () => {
      alive = true
    })
    const keepAlive = setInterval(() => {
      if (!alive) return socket.terminate()
      alive = false
      socket.ping()
    }, config.subscriptions.heartbeatMs)
    const closedHere = server.opened(
      {
        protocol: socket.protocol,
        send: (data) =>
          new Promise<void>((resolve) => {
            if (socket.readyState !== socket.OPEN) return resolve()
            // A failed send means the socket is closing: its close ends everything.
            socket.send(data, () => resolve())
          }),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (cb) =>
          socket.on('message', async (data) => {
            try {
              await cb(String(data))
            } catch (err) {
              // A message type only the server sends (graphql-ws throws "Unexpected message"): the
              // protocol's 4400; anything else is this gateway's fault.
              if (err instanceof Error && err.message.startsWith('Unexpected message')) socket.close(CloseCode.BadRequest, 'Invalid message received')
              else {
                logger.warn({ err }, 'a WebSocket message failed')
                socket.close(INTERNAL_ERROR, 'Internal error')
              }
            }
          }),
      },
      { socket, connection },
    )
    const opened = performance.now()
    socket.once('close', (code: number, reason: Buffer) => {
      clearInterval(keepAlive)
      logger.info({ client: connection.client, code, ms: Math.round(performance.now() - opened) }, 'WebSocket closed')
      void closedHere(code, String(reason)).catch((err: unknown) => logger.warn({ err }, 'closing a WebSocket failed'))
    })
  })

  return {
    upgrade(req, socket, head) {
      socket.on('error', () => {})
      if (!isGraphqlWebSocket(req)) {
        // node:http versions without shouldUpgradeCallback hand every upgrade here.
        refuse(req, socket, badRequest(WEBSOCKET_REFUSAL))
        return
      }
      if (closed) {
        refuse(req, socket, new AppError('unavailable', 'The gateway is shutting down; subscribe again (another instance will answer).'))
        return
      }
      const forwarded = req.headers['x-forwarded-for']
      // Browsers apply no CORS to a WebSocket: a page of an origin outside CORS_ORIGINS, which could
      // not read /graphql by HTTP, is refused here instead (the gateway's own pages are not).
      const origin = req.headers.origin
      const allowed = config.cors.public
      if (origin !== undefined && allowed !== '*' && !allowed.includes(origin) && origin.replace(/^https?:\/\//, '') !== req.headers.host) {
        refuse(
          req,
          socket,
          new AppError('unauthorized', `WebSocket connections from the web origin ${quoted(origin)} are not allowed (CORS_ORIGINS).`, { status: 403 }),
        )
        return
      }
      const client = clientIdOf(Array.isArray(forwarded) ? forwarded.join(',') : forwarded, { incoming: req }, config)
      limits.consume('public', client).then(
        () => {
          if (closed || socket.destroyed) return socket.destroy()
          const headers = new Headers()
          for (const name of ['origin', 'user-agent']) {
            const value = req.headers[name]
            if (typeof value === 'string') headers.set(name, value)
          }
          let url = 'http://localhost/graphql'
          try {
            url = new URL('/graphql', `http://${req.headers.host ?? 'localhost'}`).href
          } catch {
            // A Host header that is no host: the context's own origin is then unknown.
          }
          const connection: Connection = { client, headers, url, gone: new AbortController(), places: new Map() }
          wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req, connection))
        },
        (e: unknown) => {
          refuse(req, socket, asAppError(e) ?? new AppError('unavailable', 'The request could not be counted; try again shortly.'))
        },
      )
    },
    get sockets() {
      return wss.clients.size
    },
    close() {
      closed = true
      for (const socket of wss.clients) socket.close(GOING_AWAY, 'Going away')
    },
    terminate() {
      closed = true
      for (const socket of wss.clients) socket.terminate()
    },
  }
}
