import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ClientSignal } from '../../core/deadlines.js'
import type { HandOn } from '../env.js'
import { type ClientIdentityConfig, clientIdOf } from '../middleware/rate-limit.js'

// The hot routes' view of one request and their answer, independent of where the request came
// from: a node:http socket (src/http/hot/node.ts, no Web Request or Response is built at all) or
// a Web Request given to app.fetch in process (tests, embedders). docs/adr/0004-hot-path.md.

export interface Exchange {
  readonly method: string
  /** The path and query as sent, e.g. `/v1/vaults/x?y=1`. */
  readonly target: string
  /** The absolute URL (Yoga's `request.url`, the key guard's own origin). */
  readonly url: string
  /** A request header by its lowercase name; undefined when absent. */
  header(name: string): string | undefined
  /** The whole body as UTF-8 text (read once). */
  text(): Promise<string>
  /** The client's identity for per-IP limits (src/http/middleware/rate-limit.ts clientIdOf). */
  clientId(who: ClientIdentityConfig): string
  /** Says when the client went away (the request's deadline aborts then). */
  readonly client: ClientSignal
  /** What GraphQL's context and Yoga's hooks read of a request: url, method, headers.get/has, signal. */
  readonly request: Request
}

/** A finished answer: lowercase header names, the body as text, or bytes once compressed (null: none). */
export interface Answer {
  status: number
  headers: Record<string, string>
  body: string | Buffer | null
}

/**
 * A request the hot path took up and gives back to the routes: what it consumed goes with it (the
 * body it read, the rate-limit verdict it took), so nothing is read or counted twice.
 */
export interface HandBack {
  body?: string
  counted?: HandOn['counted']
}

/** undefined: not a hot request (nothing was read or counted; the routes take it as it is). */
export type HotHandler = (exchange: Exchange) => Promise<Answer | HandBack> | undefined

export const isAnswer = (out: Answer | HandBack): out is Answer => 'status' in out

/** Tries each handler in turn (each one decides from the method, path and headers alone). */
export function firstHot(...handlers: HotHandler[]): HotHandler {
  return (exchange) => {
    for (const handler of handlers) {
      const out = handler(exchange)
      if (out) return out
    }
    return undefined
  }
}

/** A Web Request as an exchange (in-process calls of app.fetch; `env`: @hono/node-server's bindings, if any). */
export function requestExchange(request: Request, env: unknown): Exchange {
  const url = request.url
  const start = url.indexOf('/', url.indexOf('//') + 2)
  return {
    method: request.method,
    target: start === -1 ? '/' : url.slice(start),
    url,
    header: (name) => request.headers.get(name) ?? undefined,
    text: () => request.text(),
    clientId: (who) => clientIdOf(request.headers.get('x-forwarded-for'), env, who),
    get client() {
      return request.signal
    },
    request,
  }
}

/** Host header values @hono/node-server accepts as they are; anything else is left to it. */
const PLAIN_HOST = /^[a-z0-9.-]+(:\d+)?$|^\[[0-9a-f:.]+\](:\d+)?$/i

/**
 * A node:http request as an exchange, or undefined when its URL is not one the routes would read
 * the same way (an absolute-form target, a missing or unusual Host header): those go the general way.
 */
export function nodeExchange(req: IncomingMessage, res: ServerResponse): Exchange | undefined {
  const target = req.url ?? ''
  const host = req.headers.host
  if (target.charCodeAt(0) !== 47 /* / */ || host === undefined || !PLAIN_HOST.test(host)) return undefined
  const url = `http://${host}${target}`
  const header = (name: string) => {
    const value = req.headers[name]
    return Array.isArray(value) ? value.join(', ') : value
  }
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
  let signal: AbortSignal | undefined
  const request = {
    url,
    method: req.method,
    headers: {
      get: (name: string) => header(name.toLowerCase()) ?? null,
      has: (name: string) => header(name.toLowerCase()) !== undefined,
    },
    // Only asked for by code outside the deadline (the deadline's own signal serves GraphQL).
    get signal() {
      if (!signal) {
        const controller = new AbortController()
        if (client.aborted) controller.abort()
        else client.addEventListener('abort', () => controller.abort())
        signal = controller.signal
      }
      return signal
    },
  } as unknown as Request
  return {
    method: req.method ?? 'GET',
    target,
    url,
    header,
    text: () =>
      new Promise<string>((resolve, reject) => {
        const chunks: Buffer[] = []
        req.on('data', (chunk: Buffer) => chunks.push(chunk))
        req.once('end', () => {
          const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')
          // As Request.text() decodes it: a leading byte order mark is not part of the text.
          resolve(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
        })
        req.once('error', reject)
        // A client that goes away mid-body: no 'end', and not always an 'error'.
        req.once('close', () => {
          if (!req.complete) reject(new Error('The client closed the request before its body was read.'))
        })
      }),
    clientId: (who) => clientIdOf(header('x-forwarded-for'), { incoming: req }, who),
    client,
    request,
  }
}
