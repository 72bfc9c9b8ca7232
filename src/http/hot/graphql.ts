import type { ExecutionResult } from 'graphql'
import { createGraphQLError } from 'graphql-yoga'
import type { Config } from '../../config.js'
import { CLIENT_CLOSED_REQUEST, Deadline } from '../../core/deadlines.js'
import { isGraphQLError } from '../../core/errors.js'
import type { RateLimits } from '../../core/rate-limit.js'
import type { RequestScope } from '../../graphql/context.js'
import type { OperationClass } from '../../graphql/public-operations.js'
import type { Yoga } from '../../graphql/yoga.js'
import type { DataUse } from '../../freshness/answer.js'
import type { Freshness } from '../../freshness/status.js'
import { dataAsOfHeaders } from '../headers.js'
import { NOT_ACCEPTABLE } from '../middleware/limits.js'
import { recordRequest, requestIdOf } from '../middleware/observability.js'
import { operationData, type ResponseCache } from '../response-cache.js'
import { countPublic, finish, graphqlError, lowercased, type Finish } from './answer.js'
import type { HotHandler } from './exchange.js'

// POST /graphql without the Web Request/Response round trips (docs/adr/0004-hot-path.md): the body
// is read and parsed once, and Yoga's own execution (getResultForParams: its params check, the
// envelop plugins: parse and validation caches, graphql-armor, the cost limit, the deadline,
// error masking, the response rules) and its own result processors (content negotiation, the
// GraphQL-over-HTTP statuses, the serialisation without internal extensions) run on it. What runs
// before Yoga on the general path (request id, rate limit, deadline, header policy, log line) is
// done here with the same functions. Anything unusual (a body that is not a JSON object of
// GraphQL params, a refusal before Yoga, a streaming Accept type) goes to the general path with
// what was read. test/http/hot-path.test.ts compares both paths.

type Params = { query: string; variables?: Record<string, unknown> | null; operationName?: string | null; extensions?: Record<string, unknown> | null }

/** What Yoga's result processors build, captured instead of a Web Response. */
class Captured {
  constructor(
    readonly body: string | null,
    readonly init: { status?: number; headers?: Record<string, string> } = {},
  ) {}
}
const CAPTURE = { Response: Captured }

/** The parts of Yoga's server object used here (public fields of graphql-yoga's YogaServer). */
interface YogaInternals {
  onResultProcessHooks: ((payload: Record<string, unknown>) => unknown)[]
  maskedErrorsOpts: { maskError(error: unknown, message: string, isDev?: boolean): Error; errorMessage: string; isDev?: boolean } | null
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const optional = (v: unknown, kind: 'string' | 'object') => v === undefined || v === null || (kind === 'string' ? typeof v === 'string' : isObject(v))

/** Params Yoga takes without a complaint (its useCheckGraphQLQueryParams); any other body goes the general way. */
function plainParams(body: unknown): body is Params {
  if (!isObject(body) || typeof body.query !== 'string') return false
  for (const key in body) if (key !== 'query' && key !== 'variables' && key !== 'operationName' && key !== 'extensions') return false
  return optional(body.variables, 'object') && optional(body.operationName, 'string') && optional(body.extensions, 'object')
}

/** The first media type of a Content-Type, as Yoga's isPOSTJsonRequest matches it. */
function jsonContentType(value: string | undefined): boolean {
  const first = value?.split(',')[0]
  return first === 'application/json' || first?.startsWith('application/json;') === true
}

/** Accept values another processor (SSE, multipart) or page (GraphiQL) may answer: left to Yoga's own HTTP handling. */
const STREAMING_OR_PAGE = /text\/event-stream|multipart\/mixed|text\/html/i

export function hotGraphql({
  config,
  yoga,
  limits,
  cache,
  classOf,
  freshness,
}: {
  config: Pick<Config, 'cors' | 'trustProxyHops' | 'ipv6Prefix' | 'requests'>
  yoga: Yoga
  limits: RateLimits
  cache: ResponseCache
  classOf: (query: string, operationName: string | undefined) => OperationClass
  /** The times of a read's Data-As-Of (decisions §10; src/http/response-cache.ts operationData). */
  freshness?: Freshness
}): HotHandler {
  const internals = yoga as unknown as YogaInternals
  const maxBytes = config.requests.bodyLimitBytes

  /** Yoga's processResult with its own hooks, capturing the answer (graphql-yoga/esm/process-request.js). */
  async function processResult(request: Request, result: ExecutionResult, scope: RequestScope) {
    let processor: ((result: unknown, fetchAPI: unknown, mediaType: string) => unknown) | undefined
    let mediaType = '*/*'
    const acceptableMediaTypes: string[] = []
    for (const hook of internals.onResultProcessHooks) {
      await hook({
        request,
        acceptableMediaTypes,
        result,
        setResult: (r: ExecutionResult) => {
          result = r
        },
        resultProcessor: processor,
        setResultProcessor: (p: typeof processor, type: string) => {
          processor = p
          mediaType = type
        },
        serverContext: scope,
      })
    }
    if (processor) return (await processor(result, CAPTURE, mediaType)) as Captured
    return new Captured(null, { status: 406, headers: { accept: acceptableMediaTypes.join('; charset=utf-8, ') } })
  }

  /** Yoga's handleError for a rejected execution (masked: graphql-yoga/esm/error.js). */
  function errorsOf(error: unknown) {
    if (typeof error === 'object' && error?.constructor?.name === 'DOMException') return []
    const masking = internals.maskedErrorsOpts
    if (!masking) return [isGraphQLError(error) ? error : createGraphQLError(String((error as Error)?.message ?? error))]
    const masked = masking.maskError(error, masking.errorMessage, masking.isDev)
    return [isGraphQLError(masked) ? masked : createGraphQLError(masked.message, { originalError: masked })]
  }

  return (x) => {
    if (x.method !== 'POST' || x.target !== '/graphql') return undefined
    if (!jsonContentType(x.header('content-type')) || STREAMING_OR_PAGE.test(x.header('accept') ?? '')) return undefined
    // A chunked body or one announced over the limit: the general path's body limit. (Without either
    // header a body comes from a Request given in process, checked once read; over HTTP it is empty.)
    const length = x.header('content-length')
    if (x.header('transfer-encoding') !== undefined || (length !== undefined && (!/^\d+$/.test(length) || Number(length) > maxBytes))) return undefined
    return (async () => {
      const started = performance.now()
      let text: string
      try {
        text = await x.text()
      } catch (e) {
        // Gone in the middle of its body: nobody to answer, one request line at 499 (src/http/errors.ts clientError).
        if (x.client.aborted) recordRequest(requestIdOf(x.header('x-request-id')), 'POST', '/graphql', CLIENT_CLOSED_REQUEST, started)
        throw e
      }
      if (length === undefined && Buffer.byteLength(text) > maxBytes) return { body: text }
      let params: unknown
      try {
        params = JSON.parse(text)
      } catch {
        return { body: text }
      }
      if (!plainParams(params)) return { body: text }
      const kind = classOf(params.query, typeof params.operationName === 'string' ? params.operationName : undefined)
      // A public query while the response cache is on: the early answers and the cache's single flight serve it.
      if (kind.public && cache.enabled) return { body: text }
      // A subscription is answered as an event stream (counted, limited and ended on shutdown by
      // src/http/middleware/event-streams.ts), whatever its Accept header: the routes' path.
      if (kind.subscription) return { body: text }
      const keyManagement = kind.keyManagement
      const count = await countPublic(x, limits, config)
      if ('counted' in count) return { body: text, counted: count.counted }
      const { rateLimit } = count
      const requestId = requestIdOf(x.header('x-request-id'))
      const deadline = Deadline.in(config.requests.timeoutMs, x.client)
      const f: Finish = { config, exchange: x, path: '/graphql', route: '/graphql', requestId, started, keyManagement, rateLimit, deadline }
      try {
        let data: DataUse | undefined
        try {
          data = await operationData(kind, freshness)
        } catch (e) {
          // Its times unread, a read is not answered (src/freshness/answer.ts): the routes' error answer.
          return graphqlError(f, e)
        }
        const scope: RequestScope = { requestId, deadline, data, client: x.clientId(config) }
        let result: ExecutionResult
        try {
          result = (await yoga.getResultForParams(
            { params: params as Parameters<Yoga['getResultForParams']>[0]['params'], request: x.request },
            scope,
          )) as ExecutionResult
        } catch (e) {
          if (deadline.clientGone) return finish(f, 499, {}, null)
          result = { errors: errorsOf(e) }
        }
        const captured = await processResult(x.request, result, scope)
        const own = lowercased(captured.init.headers ?? {})
        const status = captured.init.status ?? 200
        // explainNotAcceptable's body; Hono keeps the replaced answer's other headers (Yoga's `accept` list) on it.
        if (status === 406 && own['content-type'] === undefined) return finish(f, 406, { ...NOT_ACCEPTABLE.headers, ...own }, NOT_ACCEPTABLE.body)
        return finish(f, status, data ? { ...own, ...dataAsOfHeaders(data.header, status) } : own, captured.body)
      } finally {
        deadline.end()
      }
    })()
  }
}
