import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { getPath } from 'hono/utils/url'
import type { ClientSignal, Deadline } from '../../core/deadlines.js'
import { AppError } from '../../core/errors.js'
import type { Bucket, RateLimitState } from '../../core/rate-limit.js'
import { requestIdOf } from '../middleware/observability.js'
import { type ClientIdentityConfig, clientIdOf } from '../middleware/rate-limit.js'

// One request, whatever brought it (docs/adr/0005-one-pipeline.md): a node:http socket
// (`fromNode`, no Web Request or Response is made unless a step asks for one) or a Web Request
// given to app.fetch in process (`fromRequest`: tests, embedders). The steps of the pipeline
// (src/http/pipeline/index.ts) read the request through it and leave what they learnt on it (its
// id, deadline, rate-limit verdict, the class of its operation, its Data-As-Of) for `finish`.

/** Where a request came from: the two adapters below fill it in. */
interface Source {
  method: string
  /** The path and query as sent, e.g. `/v1/vaults/x?y=1`. */
  target: string
  url: string
  header(name: string): string | undefined
  /** Every header, as sent (for a Web Request that must carry them on). */
  headers(): [string, string][]
  /** Whether a body follows the head (a length other than 0, or chunked; in process: a body). */
  hasBody: boolean
  /** The body's bytes, at most `limit` of them (over it: `undefined`, the rest left unread). */
  read(limit: number): Promise<Buffer | undefined>
  /** The body as a stream, unread (for a Web Request handed to Hono or Yoga). */
  stream(): ReadableStream<Uint8Array> | null
  /** Whether body bytes are still on their way unread once answered (the connection is then closed). */
  bodyUnread(): boolean
  client: ClientSignal
  /** @hono/node-server's bindings (`incoming`, `outgoing`), when there is a socket. */
  env: unknown
}

export class Exchange {
  readonly method: string
  readonly target: string
  readonly url: string
  /** The path as the routes match it (Hono's getPath: percent-decoded except `%25`). */
  readonly path: string
  readonly requestId: string
  /** performance.now() when it arrived: its duration in the log line and metrics. */
  readonly started = performance.now()
  /** The route pattern of the log line and metrics (Hono's routePath where Hono answered). */
  route = 'unmatched'
  /** Set by `admit` on the API paths; GraphQL's context takes its signal. */
  deadline?: Deadline
  /** Rate-limit verdicts taken for this request, by bucket: counted once however many steps ask. */
  readonly counted: Partial<Record<Bucket, Promise<RateLimitState | null>>> = {}
  /** An operation selecting key management (src/graphql/public-operations.ts): the key-management header policy. */
  keyManagement?: boolean
  /** A read's Data-As-Of (src/http/headers.ts dataAsOfHeaders), set by the step that computed or found it. */
  dataAsOf?: string | null
  /** The largest body `text()` reads on this path (set by `admit`); past it, `bad_request`. */
  bodyLimit = Number.POSITIVE_INFINITY
  #text?: Promise<string>
  #client?: string
  #request?: Request

  constructor(private readonly source: Source) {
    this.method = source.method
    this.target = source.target
    this.url = source.url
    this.path = getPath({ url: source.url } as Request)
    this.requestId = requestIdOf(source.header('x-request-id'))
  }

  /** A request header by its lowercase name; undefined when absent. */
  header(name: string): string | undefined {
    return this.source.header(name)
  }

  get hasBody(): boolean {
    return this.source.hasBody
  }

  /** Says when the client went away (the deadline aborts then). */
  get client(): ClientSignal {
    return this.source.client
  }

  /** @hono/node-server's bindings for what reads them (the socket's address, whether the client left). */
  get env(): unknown {
    return this.source.env
  }

  /** The whole body as UTF-8 text, read once, within `bodyLimit` bytes. */
  text(): Promise<string> {
    this.#text ??= this.source.read(this.bodyLimit).then((bytes) => {
      if (bytes === undefined) throw new AppError('bad_request', `The request body is larger than ${this.bodyLimit} bytes.`)
      const text = bytes.toString('utf8')
      // As Request.text() decodes it: a leading byte order mark is not part of the text.
      return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
    })
    return this.#text
  }

  /** Whether the body was read (or began to be). */
  get bodyTaken(): boolean {
    return this.#text !== undefined
  }

  /** The client's identity for per-IP limits (src/http/middleware/rate-limit.ts clientIdOf), once. */
  clientId(who: ClientIdentityConfig): string {
    this.#client ??= clientIdOf(this.header('x-forwarded-for'), this.source.env, who)
    return this.#client
  }

  /** Body bytes still on their way, unread (a refusal before the body, a body over the limit). */
  bodyUnread(): boolean {
    return this.source.bodyUnread()
  }

  /**
   * The request as a Web Request (Yoga's `fetch`, the Hono routes, GraphQL's context): made once,
   * carrying the body as read, or as a stream when nobody read it.
   */
  async web(): Promise<Request> {
    if (this.#request) return this.#request
    const carriesBody = this.method !== 'GET' && this.method !== 'HEAD' && this.source.hasBody
    const body = !carriesBody ? undefined : this.#text ? await this.#text : this.source.stream()
    this.#request = new Request(this.url, {
      method: this.method,
      headers: this.source.headers(),
      body,
      signal: signalOf(this.client),
      ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
    } as RequestInit)
    return this.#request
  }

  /**
   * What GraphQL's context and Yoga's hooks read of a request (url, method, headers, signal),
   * without making a Web Request: the common read never needs one.
   */
  get request(): Request {
    const header = (name: string) => this.header(name.toLowerCase())
    const client = this.client
    let signal: AbortSignal | undefined
    return {
      url: this.url,
      method: this.method,
      headers: { get: (name: string) => header(name) ?? null, has: (name: string) => header(name) !== undefined },
      get signal() {
        signal ??= signalOf(client)
        return signal
      },
    } as unknown as Request
  }
}

/** An AbortSignal that aborts when the client goes away. */
function signalOf(client: ClientSignal): AbortSignal {
  if (client instanceof AbortSignal) return client
  const controller = new AbortController()
  if (client.aborted) controller.abort()
  else client.addEventListener('abort', () => controller.abort())
  return controller.signal
}

/** A Web Request (app.fetch in process; `env`: @hono/node-server's bindings, if any). */
export function fromRequest(request: Request, env?: unknown): Exchange {
  const url = request.url
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const length = request.headers.get('content-length')
  return new Exchange({
    method: request.method,
    target: start === -1 ? '/' : url.slice(start),
    url,
    header: (name) => request.headers.get(name) ?? undefined,
    headers: () => [...request.headers],
    hasBody: request.body !== null && length !== '0',
    read: async (limit) => {
      if (length !== null && /^\d+$/.test(length) && Number(length) > limit) return undefined
      const bytes = Buffer.from(await request.arrayBuffer())
      return bytes.byteLength > limit ? undefined : bytes
    },
    stream: () => request.body,
    bodyUnread: () => false,
    client: request.signal,
    env,
  })
}

/** A node:http request; its answer is written to `res` by the node adapter (src/http/pipeline/node.ts). */
export function fromNode(req: IncomingMessage, res: ServerResponse): Exchange {
  const raw = req.url ?? '/'
  const host = req.headers.host ?? 'localhost'
  // An absolute-form target (a request through a proxy) names its own host.
  let url: string
  let target = raw
  if (raw.charCodeAt(0) === 47 /* / */) url = `http://${host}${raw}`
  else {
    try {
      const u = new URL(raw)
      target = `${u.pathname}${u.search}`
      url = u.href
    } catch {
      url = `http://${host}/`
      target = '/'
    }
  }
  const header = (name: string) => {
    const value = req.headers[name]
    return Array.isArray(value) ? value.join(', ') : value
  }
  const length = req.headers['content-length']
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
  // Closed before the answer was written: the client went away.
  const client: ClientSignal = {
    get aborted() {
      return !res.writableFinished && (res.destroyed || req.socket.destroyed)
    },
    addEventListener: (_type: string, listener: () => void) => {
      res.once('close', () => {
        if (!res.writableFinished) listener()
      })
    },
  } as ClientSignal
  return new Exchange({
    method: req.method ?? 'GET',
    target,
    url,
    header,
    headers: () => {
      const out: [string, string][] = []
      const h = req.rawHeaders
      for (let i = 0; i < h.length; i += 2) out.push([h[i]!, h[i + 1]!])
      return out
    },
    hasBody,
    read: (limit) =>
      new Promise<Buffer | undefined>((resolve, reject) => {
        if (!hasBody) return resolve(Buffer.alloc(0))
        if (length !== undefined && /^\d+$/.test(length) && Number(length) > limit) return resolve(undefined)
        const chunks: Buffer[] = []
        let size = 0
        const onData = (chunk: Buffer) => {
          size += chunk.byteLength
          if (size > limit) {
            // The rest is not read: the answer closes the connection (src/http/pipeline/finish.ts).
            req.off('data', onData)
            req.pause()
            resolve(undefined)
            return
          }
          chunks.push(chunk)
        }
        req.on('data', onData)
        req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
        req.once('error', reject)
        // A client that goes away mid-body: no 'end', and not always an 'error'.
        req.once('close', () => {
          if (!req.complete) reject(new Error('The client closed the request before its body was read.'))
        })
      }),
    stream: () => (hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : null),
    bodyUnread: () => hasBody && !req.readableEnded,
    client,
    env: { incoming: req, outgoing: res },
  })
}
