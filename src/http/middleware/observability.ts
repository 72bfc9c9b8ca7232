import { randomUUID } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import type { Plugin } from 'graphql-yoga'
import { getOperationAST } from 'graphql'
import { isErrorCode } from '../../core/errors.js'
import { logger } from '../../core/log.js'
import { errorsByCode, graphqlDuration, graphqlOperations, httpDuration, httpRequests, operationLabel } from '../../core/metrics.js'
import type { AppEnv } from '../env.js'

/**
 * One log line and two metrics per request. The log carries the request id (also echoed in
 * `X-Request-Id`), method, route pattern, status and duration — never headers, bodies or query
 * strings, which may hold tokens, keys or cursors.
 */
export const requestObservability: MiddlewareHandler<AppEnv> = async (c, next) => {
  const started = performance.now()
  await next()
  recordRequest(c.get('requestId'), c.req.method, c.req.routePath || 'unmatched', c.res.status, started)
}

/** The request's id: the caller's X-Request-Id (at most 128 characters), else a new UUID. */
export const requestIdOf = (header: string | null | undefined) => header?.slice(0, 128) || randomUUID()

/** The log line and metrics of one answered request; `started` is its `performance.now()`. */
export function recordRequest(requestId: string, method: string, route: string, status: number, started: number): void {
  const seconds = (performance.now() - started) / 1000
  httpRequests.inc({ route, method, status: String(status) })
  httpDuration.observe({ route, method }, seconds)
  logger.info({ requestId, method, route, status, ms: Math.round(seconds * 10_000) / 10 }, 'request')
}

/** GraphQL operations by name and type, their latency, and the error codes they answered with. */
export const useOperationMetrics = (): Plugin => ({
  onExecute({ args }) {
    const started = performance.now()
    const op = getOperationAST(args.document, args.operationName)
    const operation = operationLabel(op?.name?.value)
    graphqlOperations.inc({ operation, type: op?.operation ?? 'unknown' })
    return {
      onExecuteDone({ result }) {
        graphqlDuration.observe({ operation }, (performance.now() - started) / 1000)
        // REST routes count their errors where they answer (errorResponse); count /graphql's here.
        const request = (args.contextValue as { request?: Request }).request
        if (request && new URL(request.url).pathname !== '/graphql') return
        if ('errors' in result && result.errors) {
          for (const e of result.errors) {
            const code = e.extensions?.code
            errorsByCode.inc({ code: isErrorCode(code) ? code : 'internal' })
          }
        }
      },
    }
  },
})
