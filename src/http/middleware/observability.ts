import { randomUUID } from 'node:crypto'
import { logger } from '../../core/log.js'
import { httpDuration, httpRequests } from '../../core/metrics.js'

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
