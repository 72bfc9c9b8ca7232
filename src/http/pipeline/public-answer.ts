import { notModified } from '../etag.js'
import type { CachedResponse } from '../response-cache.js'
import type { BodyAnswer } from './answer.js'
import type { Exchange } from './exchange.js'

/** A public answer (an ETag and `cacheControl`: a REST read, a GraphQL GET by documentId): 304 when the client has it already. */
export function publicAnswer(x: Exchange, r: CachedResponse): BodyAnswer {
  if (r.dataAsOf !== undefined) x.dataAsOf = r.dataAsOf
  const current = notModified(x.header('if-none-match'), r.etag!)
  return {
    status: current ? 304 : 200,
    headers: { 'content-type': r.contentType, etag: r.etag!, 'cache-control': r.cacheControl!, ...(r.vary ? { vary: r.vary } : {}) },
    body: current || x.method === 'HEAD' ? null : r.body,
  }
}
