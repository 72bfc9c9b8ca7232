import { createHash } from 'node:crypto'
import { cacheLookups } from '../core/metrics.js'

/** A weak ETag of a body: 27 base64url characters of its SHA-256. */
export function etagOf(body: string): string {
  return `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
}

/** True when an If-None-Match header lists this ETag (or `*`). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false
  return header.split(',').some((t) => {
    const tag = t.trim()
    return tag === '*' || tag === etag || tag.replace(/^W\//, '') === etag.replace(/^W\//, '')
  })
}

/** 304 when the client's copy (If-None-Match) is current: a revalidation, counted as an ETag hit or miss. */
export function notModified(ifNoneMatch: string | null | undefined, etag: string): boolean {
  if (ifNoneMatch == null) return false
  const hit = etagMatches(ifNoneMatch, etag)
  cacheLookups.inc({ cache: 'rest_etag', result: hit ? 'hit' : 'miss' })
  return hit
}
