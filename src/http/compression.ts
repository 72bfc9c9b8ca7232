import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

// Compression of large answers (GraphiQL's page is ~9 MB, the reference's Swagger UI bundle ~1.5 MB,
// big GraphQL and REST answers): one policy around the whole app, after the routes and the early
// answers (src/http/early-answers.ts), so every answer meets the same rule.
//
// - Only answers of at least COMPRESS_MIN_BYTES (default 8 KiB; 0 turns compression off): below
//   that the bytes saved do not pay for the CPU, and nothing changes on the hot path of small
//   cached reads (their size is read without touching the body).
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

/** @hono/node-server's own Response keeps a string or bytes body readable without a stream: its size costs nothing. */
let bodyCache: symbol | undefined
function knownBodySize(res: Response): number | undefined {
  const length = res.headers.get('content-length')
  if (length !== null && /^\d+$/.test(length)) return Number(length)
  bodyCache ??= Object.getOwnPropertySymbols(res).find((s) => s.description === 'cache')
  const cached = bodyCache && (res as unknown as Record<symbol, [number, unknown, unknown] | undefined>)[bodyCache]
  const body = cached?.[1]
  if (typeof body === 'string') return Buffer.byteLength(body)
  if (body instanceof Uint8Array) return body.byteLength
  return undefined
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

function addVary(headers: Headers) {
  const vary = varyWithEncoding(headers.get('vary'))
  if (vary) headers.set('Vary', vary)
}

const weak = (etag: string) => (etag.startsWith('W/') ? etag : `W/${etag}`)

/** Wraps the app's fetch: answers of at least `minBytes` are compressed for clients that accept it (0 = never). */
export function withCompression(
  minBytes: number,
  fetch: (request: Request, env?: unknown) => Promise<Response>,
): (request: Request, env?: unknown) => Promise<Response> {
  if (minBytes <= 0) return fetch
  return async (request, env) => {
    const res = await fetch(request, env)
    if (!eligible(request.method, res.status, (name) => res.headers.get(name))) return res
    const encoding = chooseEncoding(request.headers.get('accept-encoding'))
    let size = knownBodySize(res)
    if (size !== undefined && size < minBytes) return res
    if (!encoding) {
      // Identity: the body is left alone (never read for its size). A large one still says it
      // varies; an answer of unknown size does not, which only keeps a cache from storing it twice.
      if (size !== undefined) {
        try {
          addVary(res.headers)
        } catch {
          // immutable headers (a fetched response): served as it came
        }
      }
      return res
    }
    if (!res.body) return res
    // Size unknown (a stream) or large: the body is read (answers of these types are finite).
    const bytes = new Uint8Array(await res.arrayBuffer())
    size = bytes.byteLength
    const headers = new Headers(res.headers)
    if (size >= minBytes) addVary(headers)
    if (size < minBytes) return new Response(bytes, { status: res.status, statusText: res.statusText, headers })
    const compressed = await compressBytes(bytes, encoding)
    headers.set('Content-Encoding', encoding)
    headers.set('Content-Length', String(compressed.byteLength))
    const etag = headers.get('etag')
    if (etag) headers.set('ETag', weak(etag))
    return new Response(new Uint8Array(compressed.buffer as ArrayBuffer, compressed.byteOffset, compressed.byteLength), {
      status: res.status,
      statusText: res.statusText,
      headers,
    })
  }
}

/** The hot path's finished answer (src/http/hot/exchange.ts Answer): lowercase header names, text body. */
interface TextAnswer {
  status: number
  headers: Record<string, string>
  body: string | Buffer | null
}

/**
 * The same rule for an answer of the hot path (docs/adr/0004-hot-path.md), which never becomes a
 * Web Response: compressed when large, compressible and welcome, with Vary and a weak ETag as above.
 */
export async function compressAnswer<A extends TextAnswer>(answer: A, method: string, acceptEncoding: string | undefined, minBytes: number): Promise<A> {
  const h = answer.headers
  if (minBytes <= 0 || typeof answer.body !== 'string' || !eligible(method, answer.status, (name) => h[name])) return answer
  // Length in bytes is at least the length in UTF-16 units / 1 and at most 3×: skip the count when clearly small.
  if (answer.body.length * 3 < minBytes) return answer
  const bytes = Buffer.from(answer.body)
  if (bytes.byteLength < minBytes) return answer
  const vary = varyWithEncoding(h.vary)
  if (vary) h.vary = vary
  const encoding = chooseEncoding(acceptEncoding)
  if (!encoding) return answer
  const compressed = await compressBytes(bytes, encoding)
  h['content-encoding'] = encoding
  if (h.etag) h.etag = weak(h.etag)
  return { ...answer, body: compressed }
}
