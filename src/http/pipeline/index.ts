import { type IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { Config } from '../../config.js'
import { Deadline } from '../../core/deadlines.js'
import { AppError } from '../../core/errors.js'
import { logger } from '../../core/log.js'
import type { RateLimits } from '../../core/rate-limit.js'
import type { CachedResponse, ResponseCache } from '../response-cache.js'
import { type Answer, type BodyAnswer, isStream, toResponse, writeAnswer } from './answer.js'
import { type Exchange, fromNode, fromRequest } from './exchange.js'
import { errorAnswer, finisher } from './finish.js'
import { graphqlCacheKey, graphqlGetCacheKey, jsonContentType } from './graphql.js'
import { publicAnswer } from './public-answer.js'

// The one request pipeline (docs/adr/0005-one-pipeline.md). Every request, from a socket or from
// app.fetch, becomes one Exchange and meets the same steps in the same order:
//
//   identify  its id and start time                        (the Exchange: src/http/pipeline/exchange.ts)
//   admit     on the API paths: body bound, per-IP count,   (`admit` below)
//             deadline
//   cache     a public read answered from memory            (`cached` below)
//   route     /graphql, the /v1 table, the key              (src/http/pipeline/graphql.ts, src/rest/step.ts,
//             verification, else the long tail (Hono)        verify.ts, long-tail.ts)
//   finish    header policy, RateLimit, Data-As-Of,         (src/http/pipeline/finish.ts)
//             X-Request-Id, compression, log line, metrics
//
// The adapters only convert: `fetch` a Web Request in and a Response out, `listener` a node:http
// request in and the answer written to its socket.

/** A route step: the answer to a request that is its own; undefined for one that is not (nothing read). */
export type Route = (x: Exchange) => Promise<Answer> | undefined

export interface Pipeline {
  /** A Web Request (tests, embedders; `env`: @hono/node-server's bindings, if any). */
  fetch(request: Request, env?: unknown): Promise<Response>
  /** The node:http request listener (src/server.ts). */
  listener(req: IncomingMessage, res: ServerResponse): void
  /**
   * Answers `error` to an upgrade not taken (src/http/pipeline/websocket.ts), on its socket, through
   * `finish` like any answer, then closes the connection.
   */
  refuse(req: IncomingMessage, socket: Duplex, error: unknown): void
}

/** Paths under the public API's admission rules (body bound, per-IP count, deadline). */
const isApiPath = (path: string) => path === '/graphql' || path.startsWith('/v1/')

export function createPipeline({
  config,
  limits,
  cache,
  routes,
  draining,
}: {
  config: Pick<Config, 'cors' | 'compressMinBytes' | 'requests' | 'trustProxyHops' | 'ipv6Prefix'>
  limits: RateLimits
  cache: ResponseCache
  /** In order: the first that takes the request answers it; the last takes every request. */
  routes: Route[]
  /** Shutting down: finish asks every client to reconnect elsewhere (`Connection: close`). */
  draining?: () => boolean
}): { handle(x: Exchange): Promise<Answer>; pipeline: Pipeline } {
  const finish = finisher(config, draining)

  /** admit: on the API paths, the body bound, the client's count (awaited by the step that answers: `admitted`) and a deadline. */
  async function admit(x: Exchange): Promise<void> {
    if (!isApiPath(x.path) || x.method === 'OPTIONS') return
    x.bodyLimit = config.requests.bodyLimitBytes
    const length = x.header('content-length')
    const verdict = limits.consume('public', x.clientId(config))
    verdict.catch(() => {})
    x.counted.public = verdict
    x.deadline = Deadline.in(config.requests.timeoutMs, x.client)
    // Announced over the bound: refused before a byte of it is read (a chunked one, once it passes it: Exchange.text).
    if (length !== undefined && x.header('transfer-encoding') === undefined && /^\d+$/.test(length) && Number(length) > x.bodyLimit)
      throw new AppError('bad_request', `The request body is larger than ${x.bodyLimit} bytes.`)
    // Of unknown length (chunked, or a stream in process): read now, within the bound, so that a
    // body over it is refused on every API path, routed or not.
    if (length === undefined && x.hasBody) await x.text()
  }

  /** cache: a public read answered from memory, after the client's count (an over-limit client gets its 429). */
  async function cached(x: Exchange): Promise<Answer | undefined> {
    if (!cache.enabled) return undefined
    if (x.method === 'GET' && x.path.startsWith('/v1/')) {
      const entry = cache.hit(`GET ${x.target}`)
      if (!entry?.route) return undefined
      x.route = entry.route
      await admitted(x)
      return publicFromCache(x, entry)
    }
    // A public GraphQL GET (a trusted document by its id): only public operations are stored under this key.
    if (x.method === 'GET' && x.path === '/graphql') {
      const entry = cache.hit(graphqlGetCacheKey(x.header('accept'), x.target))
      if (!entry) return undefined
      x.route = '/graphql'
      x.keyManagement = false
      await admitted(x)
      return publicFromCache(x, entry)
    }
    if (x.method === 'POST' && x.path === '/graphql' && jsonContentType(x.header('content-type'))) {
      x.route = '/graphql'
      const entry = cache.hit(graphqlCacheKey(x.header('accept'), await x.text()))
      if (!entry) return undefined
      x.keyManagement = false
      await admitted(x)
      if (entry.dataAsOf !== undefined) x.dataAsOf = entry.dataAsOf
      return { status: 200, headers: { 'content-type': entry.contentType }, body: entry.body }
    }
    return undefined
  }

  /** route: the first step that takes the request. */
  function route(x: Exchange): Promise<Answer> {
    for (const r of routes) {
      const answer = r(x)
      if (answer) return answer
    }
    throw new Error(`No route took ${x.method} ${x.path}: the long tail must be last.`)
  }

  async function handle(x: Exchange): Promise<Answer> {
    let answer: Answer
    try {
      await admit(x)
      answer = (await cached(x)) ?? (await route(x))
    } catch (e) {
      answer = errorAnswer(x, e)
    } finally {
      x.deadline?.end()
    }
    const out = await finish(x, answer)
    // HEAD: the GET's headers, no body (node:http drops it too; a Response must not have one).
    return x.method === 'HEAD' && !isStream(out) ? { ...out, body: null } : out
  }

  return {
    handle,
    pipeline: {
      fetch: async (request, env) => toResponse(await handle(fromRequest(request, env))),
      listener: (req, res) => {
        const x = fromNode(req, res)
        handle(x)
          .then((answer) => writeAnswer(res, answer))
          .catch((err: unknown) => {
            // Every step's failure is an answer; this is a failure to write (the client gone, typically).
            if (!res.destroyed) logger.warn({ err }, 'writing an answer failed')
            res.destroy()
          })
      },
      refuse: (req, socket, error) => {
        // node:http hands an upgrade its bare socket: a response is made for it, as for any request.
        const res = new ServerResponse(req)
        res.assignSocket(socket as Socket)
        res.once('finish', () => socket.end())
        const x = fromNode(req, res)
        if (x.path === '/graphql') x.route = '/graphql'
        // The standard error body: a WebSocket client is no GraphQL-over-HTTP client.
        finish(x, errorAnswer(x, error, 'standard'))
          .then((answer) => {
            answer.headers.connection = 'close'
            return writeAnswer(res, answer)
          })
          .catch(() => socket.destroy())
      },
    },
  }
}

/** The client's public count, taken by `admit`: its refusal (over the limit, or the limiter failed) is thrown here. */
export async function admitted(x: Exchange): Promise<void> {
  await x.counted.public
}

/** A cached REST answer: its ETag, its shared-cache lifetime, and 304 when the client has it already. */
function publicFromCache(x: Exchange, entry: CachedResponse): BodyAnswer {
  if (!entry.etag) {
    if (entry.dataAsOf !== undefined) x.dataAsOf = entry.dataAsOf
    return { status: 200, headers: { 'content-type': entry.contentType }, body: entry.body }
  }
  return publicAnswer(x, entry)
}
