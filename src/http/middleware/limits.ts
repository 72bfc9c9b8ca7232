import type { Context as HonoContext, MiddlewareHandler } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { AppError, toAppError } from '../../core/errors.js'
import { logger } from '../../core/log.js'
import { errorsByCode } from '../../core/metrics.js'
import { smallBodyLimit } from './body-limit.js'
import type { AppEnv } from '../env.js'
import { errorResponse } from '../errors.js'

/** Bodies larger than `maxBytes` are refused before they are read whole: 400 `bad_request`. */
export function limitBody(maxBytes: number): MiddlewareHandler<AppEnv> {
  return smallBodyLimit<AppEnv>({
    maxSize: maxBytes,
    onError: () => {
      throw new AppError('bad_request', `The request body is larger than ${maxBytes} bytes.`)
    },
  })
}

// The deadline of each request in flight, for the GraphQL context (by the Request object Hono and
// Yoga share, so no other layer has to carry it). Its signal and timer are made on first use: a
// request answered without running GraphQL (a cached read, a health check) never pays for them.
interface Deadline {
  at: number
  ms: number
  signal?: AbortSignal
  timer?: NodeJS.Timeout
}
const deadlines = new WeakMap<Request, Deadline>()

/** The signal that aborts when the request's deadline passes or its client goes away. */
export function requestSignal(request: Request): AbortSignal {
  const deadline = deadlines.get(request)
  if (!deadline) return request.signal
  if (!deadline.signal) {
    const controller = new AbortController()
    deadline.timer = setTimeout(() => controller.abort(timeoutError(deadline.ms)), Math.max(0, deadline.at - Date.now()))
    deadline.signal = AbortSignal.any([controller.signal, request.signal])
  }
  return deadline.signal
}

/** `forwarded` (a copy of `original` made to re-read its body) keeps the original's deadline. */
export function shareDeadline(original: Request, forwarded: Request): void {
  const deadline = deadlines.get(original)
  if (deadline) deadlines.set(forwarded, deadline)
}

/**
 * Runs `work` for `detached`, a copy of `original` made to outlive it (a cached answer refreshed in
 * the background, after `original` may have been answered). `detached` gets a deadline of its own,
 * as long as the original's and counted from now: the original's timer is cleared when it ends
 * (work under it would then run without a deadline, or under a timer that nothing clears), and its
 * client going away must not abort work done for later callers. The timer is cleared when `work`
 * settles. `detached` should carry no signal of the original's.
 */
export async function withOwnDeadline<T>(original: Request, detached: Request, work: () => Promise<T>): Promise<T> {
  const ms = deadlines.get(original)?.ms
  if (ms === undefined) return work()
  const deadline: Deadline = { at: Date.now() + ms, ms }
  deadlines.set(detached, deadline)
  try {
    return await work()
  } finally {
    clearTimeout(deadline.timer)
  }
}

export const timeoutError = (ms: number) => new AppError('unavailable', `The request took longer than ${ms} ms; try again shortly.`)

/**
 * Gives every request a deadline: after `ms` its signal aborts with `unavailable`. GraphQL queries
 * (and the REST reads built on them) stop there: the executor answers at once and starts no
 * further resolver, so no further SQL is sent. Mutations are never cut short (see
 * useRequestDeadline). A statement already running in PostgreSQL ends at DB_STATEMENT_TIMEOUT_MS.
 */
export function requestDeadline(ms: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const deadline: Deadline = { at: Date.now() + ms, ms }
    deadlines.set(c.req.raw, deadline)
    try {
      await next()
    } finally {
      clearTimeout(deadline.timer)
    }
  }
}

/**
 * Answers `unavailable` after `ms` whatever the handler is waiting for (the handler's own work is
 * left to finish or fail). For probes such as /readyz, which must answer even when the database
 * neither answers nor refuses (a network partition).
 */
export function answerWithin(ms: number, message: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AppError('unavailable', message)), ms)
    })
    const work = next()
    work.catch(() => {})
    try {
      await Promise.race([work, late])
    } finally {
      clearTimeout(timer)
    }
  }
}

/**
 * Errors raised before Yoga sees a /graphql request (body too large, rate limited) answered as a
 * GraphQL response, with the same codes and HTTP status as REST.
 */
export function graphqlErrorResponse(c: HonoContext, error: unknown): Response {
  const app = toAppError(error)
  if (!(error instanceof AppError)) logger.error({ err: error, requestId: c.get('requestId' as never), path: c.req.path }, 'unexpected error')
  errorsByCode.inc({ code: app.code })
  const headers = (app.extensions.http as { headers?: Record<string, string> } | undefined)?.headers
  if (headers) for (const [k, v] of Object.entries(headers)) c.header(k, v)
  c.header('Cache-Control', 'no-store')
  return c.json({ errors: [{ message: app.message, extensions: { code: app.code } }] }, app.status as ContentfulStatusCode)
}

/** The error answer in the shape of the route: a GraphQL response on /graphql, the standard body elsewhere. */
export function answerError(err: unknown, c: HonoContext<AppEnv>): Response {
  return c.req.path === '/graphql' ? graphqlErrorResponse(c, err) : errorResponse(c, err)
}

/**
 * Yoga answers a request whose Accept header allows no format it serves (say, a browser asking
 * /graphql for HTML while GraphiQL is off) with an empty 406: give it a body saying what to accept.
 */
export const explainNotAcceptable: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next()
  if (c.res.status === 406 && !c.res.headers.get('content-type')) {
    c.res = new Response(
      JSON.stringify({ errors: [{ message: 'Accept application/graphql-response+json or application/json (GraphiQL is turned off on this server).', extensions: { code: 'bad_request' } }] }),
      { status: 406, headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' } },
    )
  }
}
