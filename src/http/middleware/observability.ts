import { randomUUID } from 'node:crypto'
import type { Context as HonoContext, MiddlewareHandler } from 'hono'
import { logger } from '../../core/log.js'
import { httpDuration, httpRequests } from '../../core/metrics.js'
import type { AppEnv } from '../env.js'

/** The request's id: the caller's X-Request-Id (at most 128 characters), else a new UUID. */
export const requestIdOf = (header: string | null | undefined) => header?.slice(0, 128) || randomUUID()

/** The log line and metrics of one answered request; `started` is its `performance.now()`. */
export function recordRequest(requestId: string, method: string, route: string, status: number, started: number): void {
  const seconds = (performance.now() - started) / 1000
  httpRequests.inc({ route, method, status: String(status) })
  httpDuration.observe({ route, method }, seconds)
  logger.info({ requestId, method, route, status, ms: Math.round(seconds * 10_000) / 10 }, 'request')
}

/**
 * The first middleware: gives the request its id and start time, lets `early` answer it at once
 * (src/http/early-answers.ts; it records its own answers), and otherwise, after the routes, echoes
 * the id in `X-Request-Id` and writes the request's log line and metrics.
 */
export function requestStart(early?: (c: HonoContext<AppEnv>) => Promise<Response | undefined> | undefined): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const requestId = requestIdOf(c.req.header('x-request-id'))
    c.set('requestId', requestId)
    c.set('started', performance.now())
    const answering = early?.(c)
    if (answering) {
      const answer = await answering
      if (answer) return answer
    }
    await next()
    // On the finished response's headers: c.header() at this point would rebuild the response
    // around a stream (Hono), which costs more than the rest of a cached answer.
    try {
      c.res.headers.set('X-Request-Id', requestId)
    } catch {
      c.header('X-Request-Id', requestId) // a response with immutable headers
    }
    recordRequest(requestId, c.req.method, c.req.routePath || 'unmatched', c.res.status, c.get('started'))
  }
}
