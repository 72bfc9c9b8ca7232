import type { Env, MiddlewareHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'

/**
 * Hono's bodyLimit, without its cost on the common case: it reads `c.req.raw.body`, which makes
 * @hono/node-server build a full Request around a stream for every call, GETs included (about as
 * much CPU as answering a cached read). A GET or HEAD has no body for anyone to read, and a
 * Content-Length within the limit is enough: Node's HTTP parser never delivers more body than it
 * announces. Chunked bodies go through bodyLimit.
 */
export function smallBodyLimit<E extends Env = Env>(options: Parameters<typeof bodyLimit>[0]): MiddlewareHandler<E> {
  const fallback = bodyLimit(options)
  return async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next()
    const length = c.req.header('content-length')
    if (length !== undefined && c.req.header('transfer-encoding') === undefined && /^\d+$/.test(length) && Number(length) <= options.maxSize) return next()
    return fallback(c, next)
  }
}
