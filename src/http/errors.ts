import type { Context as HonoContext } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { AppError, errorBody, toAppError } from '../core/errors.js'
import { logger } from '../core/log.js'
import { errorsByCode } from '../core/metrics.js'

/** The one REST error body (decisions.md §4), for every error a route can produce. */
export function errorResponse(c: HonoContext, error: unknown): Response {
  const app = toAppError(error)
  if (!(error instanceof AppError)) {
    logger.error({ err: error, requestId: c.get('requestId' as never), path: c.req.path }, app.code === 'unavailable' ? 'database unavailable' : 'unexpected error')
  }
  errorsByCode.inc({ code: app.code })
  const headers = (app.extensions.http as { headers?: Record<string, string> } | undefined)?.headers
  if (headers) for (const [k, v] of Object.entries(headers)) c.header(k, v)
  return c.json(errorBody(app.code, app.message), app.status as ContentfulStatusCode)
}
