import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

// Compression of large answers (GraphiQL's page is ~9 MB, the reference's Swagger UI bundle ~1.5 MB,
// big GraphQL and REST answers): one policy for every answer, applied by the request
// pipeline's `finish` (src/http/pipeline/finish.ts), so every answer meets the same rule.
//
// - Only answers of at least COMPRESS_MIN_BYTES (default 8 KiB; 0 turns compression off): below
//   that the bytes saved do not pay for the CPU, and nothing changes on the hot path of small
//   cached reads (a text body's length bounds its size without counting bytes).
// - The client's Accept-Encoding decides, with its q-values: br or gzip, br when both are equally
//   welcome; `identity` (or nothing acceptable) gets the answer as it is.
// - Never text/event-stream (a stream of events must reach the client as each is written) nor
//   multipart (incremental delivery), nor an answer marked `no-transform` or already encoded.
// - `Vary: Accept-Encoding` on every answer large enough to be compressed, whether it was or not,
//   so shared caches keep the variants apart.
// - A compressed answer's ETag is weak (W/"…"): its bytes differ from the identity answer's,
//   while If-None-Match compares weakly (RFC 9110 §13.1.2), so revalidation still answers 304.
// - zlib runs on libuv's thread pool (the async functions): a 9 MB page does not hold the event loop.

export type Encoding = 'br' | 'gzip'

const brotli = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

// Brotli's default quality (11) takes seconds on megabytes; 5 compresses GraphiQL's page to about
// what gzip -9 does, several times faster. gzip's default level (6) is the usual trade-off.
const BROTLI_OPTIONS = { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } }

const COMPRESSIBLE = /^(text\/|application\/(json|graphql-response\+json|javascript|xml|[\w.+-]+\+json|[\w.+-]+\+xml)|image\/svg\+xml)/i
const NEVER = /^(text\/event-stream|multipart\/)/i

const parsed = new Map<string, Encoding | undefined>()

/**
 * The encoding to answer with for an Accept-Encoding header: the supported one with the highest
 * q-value above 0 (br on a tie), `undefined` for identity. `*` stands for any encoding not named.
 */
export function chooseEncoding(header: string | null | undefined): Encoding | undefined {
  if (!header) return undefined
  const known = parsed.get(header)
  if (known !== undefined || parsed.has(header)) return known
  const q: Record<string, number> = {}
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    if (!name) continue
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    const value = qParam ? Number(qParam.slice(2)) : 1
    q[name] = Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : 0
  }
  const weight = (e: Encoding) => q[e] ?? (e === 'gzip' ? q['x-gzip'] : undefined) ?? q['*'] ?? 0
  const br = weight('br')
  const gz = weight('gzip')
  const choice: Encoding | undefined = br <= 0 && gz <= 0 ? undefined : br >= gz ? 'br' : 'gzip'
  if (parsed.size >= 256) parsed.clear()
  parsed.set(header, choice)
  return choice
}

export async function compressBytes(body: Uint8Array, encoding: Encoding): Promise<Buffer> {
  return encoding === 'br' ? brotli(body, BROTLI_OPTIONS) : gzipAsync(body)
}

/**
 * Whether an answer may be compressed at all, whatever its size: the rule of both wrappers below
 * (`header` reads one of its headers by lowercase name).
 */
function eligible(method: string, status: number, header: (name: string) => string | null | undefined): boolean {
  if (method === 'HEAD' || status < 200 || status === 204 || status === 206 || status === 304) return false
  const type = header('content-type')
  if (!type || !COMPRESSIBLE.test(type) || NEVER.test(type) || header('content-encoding') != null) return false
  return !/\bno-transform\b/i.test(header('cache-control') ?? '')
}

/** Vary with Accept-Encoding added (once; not next to `*`); undefined when it already says so. */
function varyWithEncoding(vary: string | null | undefined): string | undefined {
  if (!vary) return 'Accept-Encoding'
  return /(^|,)\s*(accept-encoding|\*)\s*(,|$)/i.test(vary) ? undefined : `${vary}, Accept-Encoding`
}

const weak = (etag: string) => (etag.startsWith('W/') ? etag : `W/${etag}`)

/** An answer known whole (src/http/pipeline/answer.ts): lowercase header names. */
interface WholeAnswer {
  status: number
  headers: Record<string, string | string[]>
  body: string | Buffer | null
}

/**
 * Compresses an answer when it is large, compressible and welcome, with Vary and a weak ETag as
 * above. The pipeline's `finish` (src/http/pipeline/finish.ts) calls it on every answer known whole.
 */
export async function compressAnswer<A extends WholeAnswer>(answer: A, method: string, acceptEncoding: string | undefined, minBytes: number): Promise<A> {
  const h = answer.headers
  const one = (name: string) => {
    const v = h[name]
    return Array.isArray(v) ? v.join(', ') : v
  }
  if (minBytes <= 0 || answer.body === null || !eligible(method, answer.status, one)) return answer
  // Length in bytes is at least the length in UTF-16 units / 1 and at most 3×: skip the count when clearly small.
  if (typeof answer.body === 'string' && answer.body.length * 3 < minBytes) return answer
  const bytes = typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body
  if (bytes.byteLength < minBytes) return answer
  const vary = varyWithEncoding(one('vary'))
  if (vary) h.vary = vary
  const encoding = chooseEncoding(acceptEncoding)
  if (!encoding) return answer
  const compressed = await compressBytes(bytes, encoding)
  h['content-encoding'] = encoding
  const etag = one('etag')
  if (etag) h.etag = weak(etag)
  if (h['content-length'] !== undefined) h['content-length'] = String(compressed.byteLength)
  return { ...answer, body: compressed }
}
