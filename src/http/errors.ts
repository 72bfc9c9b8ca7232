import type { Context as HonoContext } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { CLIENT_CLOSED_REQUEST, clientClosedRequest } from '../core/deadlines.js'
import { AppError, echoSafe, errorBody, toAppError } from '../core/errors.js'
import { logger } from '../core/log.js'
import { errorsByCode } from '../core/metrics.js'
import type { AppEnv } from './env.js'
import { clientLeft } from './middleware/observability.js'

/**
 * The AppError a client sees for `error`, counted in the metrics; an unexpected one is logged (never
 * answered) here, once. `headers`: the error's own (Retry-After, WWW-Authenticate). `clientGone`:
 * the client closed its connection before the answer (src/http/middleware/observability.ts
 * clientLeft): whatever failed (reading the rest of its body, typically), it is a 499, left to the
 * request line at info; not an error, not an outage.
 */
export function clientError(
  error: unknown,
  where: { requestId: string; path: string; clientGone?: boolean },
): { app: AppError; headers: Record<string, string> } {
  const app = where.clientGone ? clientClosedRequest() : toAppError(error)
  if (!where.clientGone && !(error instanceof AppError)) {
    logger.error(
      { err: error, requestId: where.requestId, path: echoSafe(where.path) },
      app.code === 'unavailable' ? 'database unavailable' : 'unexpected error',
    )
  }
  // A client that went away (status 499) is in the request line, not among the errors.
  if (app.status !== CLIENT_CLOSED_REQUEST) errorsByCode.inc({ code: app.code })
  return { app, headers: (app.extensions.http as { headers?: Record<string, string> } | undefined)?.headers ?? {} }
}

function answered(c: HonoContext<AppEnv>, error: unknown): AppError {
  const clientGone = c.get('deadline')?.clientGone || clientLeft(c.env)
  const { app, headers } = clientError(error, { requestId: c.get('requestId'), path: c.req.path, clientGone })
  for (const [k, v] of Object.entries(headers)) c.header(k, v)
  return app
}

/** The one REST error body (docs/spec/decisions.md §4), for every error a route can produce. */
export function errorResponse(c: HonoContext<AppEnv>, error: unknown): Response {
  const app = answered(c, error)
  return c.json(errorBody(app.code, app.message), app.status as ContentfulStatusCode)
}

/**
 * Errors raised before Yoga sees a /graphql request (body too large, rate limited) answered as a
 * GraphQL response, with the same codes and HTTP status as REST.
 */
export function graphqlErrorResponse(c: HonoContext<AppEnv>, error: unknown): Response {
  const app = answered(c, error)
  c.header('Cache-Control', 'no-store')
  return c.json(graphqlErrorBody(app), app.status as ContentfulStatusCode)
}

/** The body of an error answered before Yoga runs on /graphql (src/http/pipeline/finish.ts errorAnswer). */
export const graphqlErrorBody = (app: AppError) => ({ errors: [{ message: app.message, extensions: { code: app.code } }] })

/** The error answer in the shape of the route: a GraphQL response on /graphql, the standard body elsewhere. */
export function answerError(err: unknown, c: HonoContext<AppEnv>): Response {
  return c.req.path === '/graphql' ? graphqlErrorResponse(c, err) : errorResponse(c, err)
}
