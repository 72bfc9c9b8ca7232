import type { MiddlewareHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'

/**
 * Hono's bodyLimit, without its cost on the common case: it reads `c.req.raw.body`, which makes
 * @hono/node-server build a full Request around a stream for every call (about as much CPU as a
 * cached API-key verification itself). A Content-Length within the limit is enough here: Node's
 * HTTP parser never delivers more body than it announces. Chunked bodies go through bodyLimit.
 */
export function smallBodyLimit(options: Parameters<typeof bodyLimit>[0]): MiddlewareHandler {
  const fallback = bodyLimit(options)
  return async (c, next) => {
    const length = c.req.header('content-length')
    if (length !== undefined && c.req.header('transfer-encoding') === undefined && /^\d+$/.test(length) && Number(length) <= options.maxSize) return next()
    return fallback(c, next)
  }
}
