import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Context } from 'hono'
import { etagMatches } from '../etag.js'

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
}

interface Asset {
  body: Uint8Array<ArrayBuffer>
  type: string
  etag: string
}

/**
 * A fixed file served from memory with an ETag (read once, on first use). Only files named in the
 * code are served: there is no path from a URL to the file system.
 */
export function staticFile(file: string, { maxAgeSeconds = 300 } = {}) {
  let asset: Asset | undefined
  const load = (): Asset => {
    const body = new Uint8Array(readFileSync(file))
    const ext = /\.[a-z]+$/.exec(file)?.[0] ?? ''
    return { body, type: TYPES[ext] ?? 'application/octet-stream', etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }
  }
  return (c: Context) => {
    asset ??= load()
    c.header('ETag', asset.etag)
    c.header('Cache-Control', `public, max-age=${maxAgeSeconds}`)
    c.header('X-Content-Type-Options', 'nosniff')
    // Weak comparison (RFC 9110 §13.1.2): a compressed copy carries the weak form (src/http/compression.ts).
    if (etagMatches(c.req.header('if-none-match'), asset.etag)) return c.body(null, 304)
    c.header('Content-Type', asset.type)
    return c.body(asset.body, 200)
  }
}
