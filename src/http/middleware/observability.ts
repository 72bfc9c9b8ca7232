import { randomUUID } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { CLIENT_CLOSED_REQUEST } from '../../core/deadlines.js'
import { logger } from '../../core/log.js'
import { httpDuration, httpRequests } from '../../core/metrics.js'
import type { AppEnv, HandOn } from '../env.js'

/** The request's id: the caller's X-Request-Id (at most 128 characters), else a new UUID. */
export const requestIdOf = (header: string | null | undefined) => header?.slice(0, 128) || randomUUID()

/** Routes load balancers, orchestrators and Prometheus call every few seconds. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics'])

/**
 * The log line and metrics of one answered request; `started` is its `performance.now()`. Probes
 * answered are logged at debug: at info they would be most of the lines; a failing one (5xx) is not.
 */
export function recordRequest(requestId: string, method: string, route: string, status: number, started: number): void {
  const seconds = (performance.now() - started) / 1000
  httpRequests.inc({ route, method, status: String(status) })
  httpDuration.observe({ route, method }, seconds)
  const fields = { requestId, method, route, status, ms: Math.round(seconds * 10_000) / 10 }
  if (PROBES.has(route) && status < 500) logger.debug(fields, 'request')
  else logger.info(fields, 'request')
}

type NodeBindings = { incoming?: { socket?: { destroyed?: boolean } }; outgoing?: { writableFinished?: boolean; destroyed?: boolean } }

/**
 * Whether the client of a request (from @hono/node-server's bindings, or the node:http listener's;
 * false in process) closed its connection before it was answered: typically in the middle of its
 * body, where reading the body fails with `ECONNRESET` "aborted". Nobody is left to answer; it is
 * no failure of ours (src/http/errors.ts clientError answers it as 499, never as an outage).
 */
export function clientLeft(env: unknown): boolean {
  const outer = env as (NodeBindings & { server?: NodeBindings }) | undefined
  const { incoming, outgoing } = outer?.server ?? outer ?? {}
  if (!incoming?.socket) return false
  return !outgoing?.writableFinished && (outgoing?.destroyed === true || incoming.socket.destroyed === true)
}

/** Whether the request (from @hono/node-server's bindings; absent in process) still has body bytes nobody read. */
function bodyLeftUnread(env: unknown): boolean {
  const incoming = (env as { incoming?: { readableEnded?: boolean; headers?: Record<string, string | string[] | undefined> } } | undefined)?.incoming
  if (!incoming?.headers || incoming.readableEnded) return false
  const length = incoming.headers['content-length']
  return incoming.headers['transfer-encoding'] !== undefined || (typeof length === 'string' && length !== '0')
}

/**
 * The first middleware: gives the request its id and start time, takes over what the early answers
 * learnt of a request they handed on (src/http/early-answers.ts: its rate-limit verdicts, in Hono's
 * env), and after the routes echoes the id in `X-Request-Id` and writes the log line and metrics.
 */
export const requestStart: MiddlewareHandler<AppEnv> = async (c, next) => {
  const requestId = requestIdOf(c.req.header('x-request-id'))
  c.set('requestId', requestId)
  c.set('started', performance.now())
  const handOn = (c.env as { handOn?: HandOn } | undefined)?.handOn
  if (handOn) c.set('counted', { ...handOn.counted })
  try {
    await next()
  } catch (e) {
    // Yoga rejects with the client's abort reason (a string, which Hono's onError never sees) when
    // the client goes away: nobody is there to answer.
    if (!c.get('deadline')?.clientGone) throw e
    c.res = new Response(null, { status: CLIENT_CLOSED_REQUEST })
  }
  // On the finished response's headers: c.header() at this point would rebuild the response
  // around a stream (Hono), which costs more than the rest of a cached answer.
  const headers: Record<string, string> = { 'X-Request-Id': requestId }
  // A refusal that left the request body unread (a body over the limit, a wrong token, a rate
  // limit): the rest of that body is still on its way and would be read as the next request on a
  // keep-alive connection. The client is told to open a new one.
  if (bodyLeftUnread(c.env)) headers.Connection = 'close'
  for (const [name, value] of Object.entries(headers)) {
    try {
      c.res.headers.set(name, value)
    } catch {
      c.header(name, value) // a response with immutable headers
    }
  }
  const status = c.get('deadline')?.clientGone ? CLIENT_CLOSED_REQUEST : c.res.status
  recordRequest(requestId, c.req.method, c.req.routePath || 'unmatched', status, c.get('started'))
}
