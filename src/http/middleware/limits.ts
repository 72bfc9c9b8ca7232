import type { MiddlewareHandler } from 'hono'
import { Deadline } from '../../core/deadlines.js'
import { AppError } from '../../core/errors.js'
import type { AppEnv } from '../env.js'
import { smallBodyLimit } from './body-limit.js'

/** Bodies larger than `maxBytes` are refused before they are read whole: 400 `bad_request`. */
export function limitBody(maxBytes: number): MiddlewareHandler<AppEnv> {
  return smallBodyLimit<AppEnv>({
    maxSize: maxBytes,
    onError: () => {
      throw new AppError('bad_request', `The request body is larger than ${maxBytes} bytes.`)
    },
  })
}

/**
 * Gives every request a deadline: after `ms` its signal aborts with `unavailable`. GraphQL queries
 * (and the REST reads built on them) stop there: the executor answers at once and starts no
 * further resolver, so no further SQL is sent. Mutations are never cut short (see
 * useRequestDeadline in src/graphql/protection.ts). A statement already running in PostgreSQL ends
 * at DB_STATEMENT_TIMEOUT_MS.
 */
export function requestDeadline(ms: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const deadline = Deadline.in(ms, c.req.raw.signal)
    c.set('deadline', deadline)
    try {
      await next()
    } finally {
      deadline.end()
    }
  }
}

/**
 * Answers `unavailable` after `ms` whatever the handler is waiting for (the handler's own work is
 * left to finish or fail). For probes such as /readyz, which must answer even when the database
 * neither answers nor refuses (a network partition).
 */
export function answerWithin(ms: number, message: string): MiddlewareHandler<AppEnv> {
  return async (_c, next) => {
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
 * Yoga answers a request whose Accept header allows no format it serves (say, a browser asking
 * /graphql for HTML while GraphiQL is off) with an empty 406: give it a body saying what to accept.
 */
/** What a 406 without a body of Yoga's becomes (also the hot path's, src/http/hot/graphql.ts). */
export const NOT_ACCEPTABLE = {
  body: JSON.stringify({
    errors: [
      {
        message: 'Accept application/graphql-response+json or application/json (GraphiQL is turned off on this server).',
        extensions: { code: 'bad_request' },
      },
    ],
  }),
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
}

export const explainNotAcceptable: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next()
  if (c.res.status === 406 && !c.res.headers.get('content-type')) {
    // Yoga's `accept` lists what it could have answered: for a subscription, an event stream only.
    const could = c.res.headers.get('accept') ?? ''
    const answer = could.includes('text/event-stream') && !could.includes('json') ? SUBSCRIPTION_NOT_ACCEPTABLE : NOT_ACCEPTABLE
    c.res = new Response(answer.body, { status: 406, headers: answer.headers })
  }
}

/** A subscription asked for with an Accept header that excludes event streams (docs/push.md). */
const SUBSCRIPTION_NOT_ACCEPTABLE = {
  body: JSON.stringify({
    errors: [{ message: 'A subscription is answered as Server-Sent Events: send Accept: text/event-stream.', extensions: { code: 'bad_request' } }],
  }),
  headers: NOT_ACCEPTABLE.headers,
}

/**
 * A /graphql request refused before its operation was classified (over the body limit, over the
 * client's rate limit) is answered under the header policy of what it selects, key management
 * included (no-store, CORS_KEY_ORIGINS): a rate-limited body, within the limit, is read and
 * classified; a body over the limit cannot be, and is answered as key management would be.
 */
export function classifyRefusedGraphql(
  classOf: (query: string, operationName: string | undefined) => { keyManagement: boolean },
  maxBytes: number,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next()
    // The refusals thrown before Yoga: the body limit (bad_request) and the rate limit.
    const code = (c.error as { code?: unknown } | undefined)?.code
    if ((code !== 'rate_limited' && code !== 'bad_request') || c.get('keyManagement') !== undefined) return
    if (c.req.method !== 'POST') {
      const query = c.req.query('query')
      if (query !== undefined && classOf(query, c.req.query('operationName')).keyManagement) c.set('keyManagement', true)
      return
    }
    // Only a rate-limited body of a known size within the limit is read (one sent over HTTP/1.1
    // has a Content-Length or is chunked; an in-process Request has neither).
    const length = c.req.header('content-length')
    const readable =
      code === 'rate_limited' &&
      c.req.header('transfer-encoding') === undefined &&
      (length === undefined || (/^\d+$/.test(length) && Number(length) <= maxBytes))
    if (!readable) {
      c.set('keyManagement', true)
      return
    }
    try {
      const params = JSON.parse(await c.req.text()) as { query?: unknown; operationName?: unknown }
      if (typeof params?.query === 'string' && classOf(params.query, typeof params.operationName === 'string' ? params.operationName : undefined).keyManagement)
        c.set('keyManagement', true)
    } catch {
      // Not a GraphQL request body: nothing it selects.
    }
  }
}
