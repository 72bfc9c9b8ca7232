import type { ExecutionResult } from 'graphql'
import { createGraphQLError, processRegularResult } from 'graphql-yoga'
import type { Config } from '../../config.js'
import { clientClosedRequest, Deadline, underDeadline } from '../../core/deadlines.js'
import { isGraphQLError } from '../../core/errors.js'
import type { DataUse } from '../../freshness/answer.js'
import type { Freshness } from '../../freshness/status.js'
import type { RequestScope } from '../../graphql/context.js'
import { type DocumentStore, namesDocument } from '../../graphql/documents.js'
import { maskError } from '../../graphql/errors.js'
import type { OperationClass } from '../../graphql/public-operations.js'
import type { Yoga } from '../../graphql/yoga.js'
import { beginRead } from '../../freshness/answer.js'
import { AppError } from '../../core/errors.js'
import { etagOf } from '../etag.js'
import type { CachedResponse, ResponseCache } from '../response-cache.js'
import { type Answer, answerOf, type BodyAnswer, isStream } from './answer.js'
import type { Exchange } from './exchange.js'
import { publicAnswer } from './public-answer.js'
import { type EventStreams, type Place, wantsEventStream } from './streams.js'
import { isJsonObject } from '../../core/formats.js'

// /graphql (GET and POST), one handler (docs/adr/0005-one-pipeline.md): the body is read and
// parsed once, the operation classified once (public, key management, read, subscription:
// src/graphql/public-operations.ts), a public query looked up in the response cache (one
// computation per key at a time), and Yoga run through its public API:
// - a JSON POST of plain GraphQL params that wants JSON: `getResultForParams` (Yoga's params
//   check, its envelop plugins: parse and validation caches, graphql-armor, the cost limit, the
//   deadline, error masking, the response rules) and Yoga's own `processRegularResult` (the
//   GraphQL-over-HTTP statuses and the serialisation without internal extensions);
// - anything else (GET, a form post, an event stream, GraphiQL's page, a body Yoga must refuse in
//   its own words): `yoga.fetch`, whose answer may be a stream (a subscription, held within
//   SUBSCRIPTIONS_MAX by src/http/pipeline/streams.ts).
// A trusted document named by `documentId` or APQ's hash (decisions §15) takes the same ways: both
// run Yoga's `onParams`, where its plugin turns the id into the document (src/graphql/documents.ts),
// so the id is resolved in one place; this step reads the same store only to classify the
// operation first. A GET by id that wants JSON is run like a JSON POST (Yoga's GET handling would
// ask for a CSRF header, which a known document does not need), and a public one is answered like
// a REST read: Cache-Control public, an ETag, 304, the response cache.

type Params = {
  query?: string
  /** A trusted document's id (decisions §15): `query` is then absent, and Yoga's plugin supplies it. */
  documentId?: string
  variables?: Record<string, unknown> | null
  operationName?: string | null
  extensions?: Record<string, unknown> | null
}

const PARAM_NAMES = new Set(['query', 'documentId', 'variables', 'operationName', 'extensions'])

/** What Yoga's result processor builds, captured instead of a Web Response (its `fetchAPI` argument). */
class Captured {
  constructor(
    readonly body: string | null,
    readonly init: { status?: number; headers?: Record<string, string> } = {},
  ) {}
}
const CAPTURE = { Response: Captured } as unknown as Parameters<typeof processRegularResult>[1]

const optional = (v: unknown, kind: 'string' | 'object') => v === undefined || v === null || (kind === 'string' ? typeof v === 'string' : isJsonObject(v))

/**
 * Params Yoga takes without a complaint (its useCheckGraphQLQueryParams, after the trusted
 * documents' plugin: a query, or an id naming one); any other body is Yoga's to refuse.
 */
function plainParams(body: unknown): body is Params {
  if (!isJsonObject(body) || (typeof body.query !== 'string' && !namesDocument(body))) return false
  for (const key in body) if (!PARAM_NAMES.has(key)) return false
  return (
    optional(body.query, 'string') &&
    optional(body.documentId, 'string') &&
    optional(body.variables, 'object') &&
    optional(body.operationName, 'string') &&
    optional(body.extensions, 'object')
  )
}

/** What a document this step cannot read (an unknown id: Yoga's plugin answers it) is taken for. */
const UNREAD: OperationClass = { public: false, keyManagement: false, read: false }

/** A public GET by documentId, as the REST shim's vault reads (src/rest/routes/vaults.ts). */
const PUBLIC_CACHE_CONTROL = 'public, max-age=10'

/** The first media type of a Content-Type, as Yoga's isPOSTJsonRequest matches it. */
export function jsonContentType(value: string | undefined): boolean {
  const first = value?.split(',')[0]
  return first === 'application/json' || first?.startsWith('application/json;') === true
}

/** Accept values another processor (SSE, multipart) or page (GraphiQL) may answer: Yoga's own HTTP handling. */
const STREAMING_OR_PAGE = /text\/event-stream|multipart\/mixed|text\/html/i

const REGULAR = ['application/graphql-response+json', 'application/json']

/**
 * The media type Yoga's regular result processor answers an Accept header with (graphql-yoga's
 * useResultProcessors: the earliest listed type that matches, application/json on a tie), or
 * undefined when it would answer none.
 */
export function regularMediaType(accept: string | undefined): string | undefined {
  for (const part of (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',')) {
    const [type, ...params] = part.split(';')
    if (!type) continue
    const charset = params.find((p) => p.includes('charset=')) ?? 'charset=utf-8'
    if (charset !== 'charset=utf-8') continue
    const [pre, suf] = type.split('/')
    let chosen: string | undefined
    for (const media of REGULAR) {
      const [mPre, mSuf] = media.split('/')
      if ((pre === '*' || pre === mPre) && (suf === '*' || suf === mSuf)) chosen = media
    }
    if (chosen) return chosen
  }
  return undefined
}

/** What a 406 without a body of Yoga's becomes. */
const NOT_ACCEPTABLE = {
  body: JSON.stringify({
    errors: [
      {
        message: 'Accept application/graphql-response+json or application/json (GraphiQL is turned off on this server).',
        extensions: { code: 'bad_request' },
      },
    ],
  }),
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
}

/** A subscription asked for with an Accept header that excludes event streams (docs/push.md). */
const SUBSCRIPTION_NOT_ACCEPTABLE = {
  body: JSON.stringify({
    errors: [{ message: 'A subscription is answered as Server-Sent Events: send Accept: text/event-stream.', extensions: { code: 'bad_request' } }],
  }),
  headers: NOT_ACCEPTABLE.headers,
}

/** Yoga answers a request whose Accept allows nothing it serves with an empty 406: this says what to accept. */
function explainNotAcceptable(answer: Answer): Answer {
  if (answer.status !== 406 || answer.headers['content-type'] !== undefined) return answer
  // Yoga's `accept` lists what it could have answered: for a subscription, an event stream only.
  const could = String(answer.headers.accept ?? '')
  const explained = could.includes('text/event-stream') && !could.includes('json') ? SUBSCRIPTION_NOT_ACCEPTABLE : NOT_ACCEPTABLE
  return { status: 406, headers: { ...answer.headers, ...explained.headers }, body: explained.body }
}

/** Yoga's handling of an execution that threw (graphql-yoga's handleError), with this gateway's masking (src/graphql/errors.ts). */
function errorsOf(error: unknown) {
  if (typeof error === 'object' && error?.constructor?.name === 'DOMException') return []
  const masked = maskError(error)
  return [isGraphQLError(masked) ? masked : createGraphQLError(masked.message, { originalError: masked })]
}

/** The cache key of a POST /graphql body. */
export const graphqlCacheKey = (accept: string | null | undefined, body: string) => `POST /graphql\n${accept ?? ''}\n${body}`

/** The cache key of a GET /graphql (path and query, as REST reads; Accept chooses the media type). */
export const graphqlGetCacheKey = (accept: string | null | undefined, target: string) => `GET ${target}\n${accept ?? ''}`

/**
 * What a GraphQL operation's Data-As-Of is computed from (decisions §10): for a read, the record of
 * the data it reads with the times, taken before it runs and passed into its context (a failure to
 * read them fails the request: src/freshness/answer.ts); key management has none.
 */
export async function operationData(kind: OperationClass, freshness: Freshness | undefined): Promise<DataUse | undefined> {
  return kind.read && !kind.keyManagement ? beginRead(freshness) : undefined
}

export interface GraphqlStep {
  config: Pick<Config, 'trustProxyHops' | 'ipv6Prefix'>
  yoga: Yoga
  cache: ResponseCache
  classOf: (query: string, operationName: string | undefined) => OperationClass
  /** The trusted documents (src/graphql/documents.ts): read to classify a request that names one. */
  documents: DocumentStore
  freshness?: Freshness
  streams: EventStreams
  /** The client's public count (taken by `admit`): throws the refusal when it is over its limit. */
  admitted: (x: Exchange) => Promise<void>
}

export function graphqlStep({ config, yoga, cache, classOf, documents, freshness, streams, admitted }: GraphqlStep): (x: Exchange) => Promise<Answer> {
  const scopeOf = (x: Exchange, data?: DataUse): RequestScope => ({ requestId: x.requestId, deadline: x.deadline, data, client: x.clientId(config) })

  /** Runs plain params through Yoga's execution and its regular result processor. */
  async function execute(request: Request, params: Params, mediaType: string, scope: RequestScope): Promise<BodyAnswer> {
    let result: ExecutionResult
    try {
      result = (await yoga.getResultForParams({ params: params as Parameters<Yoga['getResultForParams']>[0]['params'], request }, scope)) as ExecutionResult
    } catch (e) {
      if (scope.deadline?.clientGone) throw clientClosedRequest()
      result = { errors: errorsOf(e) }
    }
    const captured = (await processRegularResult(result, CAPTURE, mediaType)) as unknown as Captured
    const headers: Record<string, string> = {}
    const own = captured.init.headers ?? {}
    for (const name in own) headers[name.toLowerCase()] = own[name]!
    return explainNotAcceptable({ status: captured.init.status ?? 200, headers, body: captured.body }) as BodyAnswer
  }

  /** Through Yoga's own HTTP handling (`yoga.fetch`): GET, form posts, event streams, GraphiQL, bodies Yoga refuses. */
  async function viaYoga(x: Exchange, kind: OperationClass | undefined): Promise<Answer> {
    await admitted(x)
    // Asked for by Accept: the place is taken before the operation runs, so concurrent requests
    // cannot overshoot. A subscription sent with Accept */* (curl's default) is answered with a
    // stream too: its place is taken once the answer says so.
    let place: Place | undefined = wantsEventStream(x.header('accept')) ? streams.admit(x.clientId(config)) : undefined
    let answer: Answer
    try {
      // A read's Data-As-Of (decisions §10) is that of the data it read; GraphiQL's page (no query) is not a read.
      const data = kind ? await operationData(kind, freshness) : undefined
      answer = explainNotAcceptable(await answerOf(await yoga.fetch(await x.web(), scopeOf(x, data))))
      if (data) x.dataAsOf = data.header
    } catch (e) {
      place?.release()
      throw e
    }
    if (!isStream(answer) || !String(answer.headers['content-type'] ?? '').startsWith('text/event-stream')) {
      place?.release()
      return answer
    }
    if (!place) {
      try {
        place = streams.admit(x.clientId(config))
      } catch (e) {
        await answer.stream.cancel().catch(() => {})
        throw e
      }
    }
    return streams.track(answer, place)
  }

  /** The class of plain params: of their query, or of the document their id names. */
  function classOfParams(params: Params): OperationClass {
    const text = documents.textOf(params)
    return text === undefined ? UNREAD : classOf(text, typeof params.operationName === 'string' ? params.operationName : undefined)
  }

  /**
   * A public operation's answer, shared through the response cache under `key` (one computation
   * per key at a time) when it is on. `stored` is what a 200 without errors becomes (a GET's adds
   * its ETag and Cache-Control), `reply` how a stored answer is answered; any other answer is
   * this caller's alone, never stored.
   */
  async function shared(
    x: Exchange,
    key: string,
    kind: OperationClass,
    params: Params,
    mediaType: string,
    stored: (r: CachedResponse) => CachedResponse,
    reply: (r: CachedResponse) => Answer,
  ): Promise<Answer> {
    // The first caller's own answer, when it is not storable (it must still reach that caller).
    let unshared: Answer | undefined
    let unsharedData: DataUse | undefined
    const storable = (a: BodyAnswer, data: DataUse | undefined): CachedResponse | undefined => {
      const body = typeof a.body === 'string' ? a.body : ''
      // An error is never stored (a raw `"errors":` cannot occur inside a JSON string, where quotes are escaped).
      if (a.status !== 200 || body.includes('"errors":')) return undefined
      return stored({ body, contentType: String(a.headers['content-type']), route: '/graphql', dataAsOf: data?.header })
    }
    const produce = async (background: boolean): Promise<CachedResponse | undefined> => {
      const data = await operationData(kind, freshness)
      if (background) {
        // Nobody waits for this answer: it may outlive this request, so it runs with a deadline of
        // its own and no client signal; an error or a non-200 is dropped, never shared.
        const detached = new Request(x.url, {
          method: x.method,
          headers: { accept: x.header('accept') ?? '*/*', ...(x.method === 'POST' ? { 'content-type': 'application/json' } : {}) },
        })
        return underDeadline(x.deadline?.detached() ?? Deadline.in(60_000), async (deadline) =>
          storable(await execute(detached, params, mediaType, { requestId: x.requestId, deadline, data }), data),
        )
      }
      unsharedData = data
      const a = await execute(x.request, params, mediaType, scopeOf(x, data))
      const r = storable(a, data)
      if (!r) unshared = a
      return r
    }
    const r = cache.enabled ? await cache.load(key, produce) : await produce(false)
    if (unshared) {
      if (unsharedData) x.dataAsOf = unsharedData.header
      return unshared
    }
    if (r) return reply(r)
    // A shared computation that failed or produced nothing: this caller's own.
    return own(x, kind, params, mediaType)
  }

  /** This caller's own answer; a read's Data-As-Of is that of the data it read. */
  async function own(x: Exchange, kind: OperationClass, params: Params, mediaType: string): Promise<Answer> {
    const data = await operationData(kind, freshness)
    const answer = await execute(x.request, params, mediaType, scopeOf(x, data))
    if (data) x.dataAsOf = data.header
    return answer
  }

  /** A JSON POST: parsed and classified once, then from the cache, or executed. */
  async function post(x: Exchange): Promise<Answer> {
    const text = await x.text()
    let params: unknown
    try {
      params = JSON.parse(text)
    } catch {
      return viaYoga(x, undefined)
    }
    if (!plainParams(params)) {
      const { query, operationName } = (isJsonObject(params) ? params : {}) as { query?: unknown; operationName?: unknown }
      // Yoga refuses it in its own words; what it would select decides the header policy.
      if (typeof query === 'string') x.keyManagement = classOf(query, typeof operationName === 'string' ? operationName : undefined).keyManagement
      return viaYoga(x, undefined)
    }
    const kind = classOfParams(params)
    x.keyManagement = kind.keyManagement
    const accept = x.header('accept')
    const mediaType = STREAMING_OR_PAGE.test(accept ?? '') ? undefined : regularMediaType(accept)
    // A subscription is an event stream whatever its Accept header (docs/push.md).
    if (kind.subscription || !mediaType) return viaYoga(x, kind)
    await admitted(x)
    if (!kind.public || !cache.enabled) return own(x, kind, params, mediaType)
    return shared(
      x,
      graphqlCacheKey(accept, text),
      kind,
      params,
      mediaType,
      (r) => r,
      (r) => {
        if (r.dataAsOf !== undefined) x.dataAsOf = r.dataAsOf
        return { status: 200, headers: { 'content-type': r.contentType }, body: r.body }
      },
    )
  }

  /**
   * A GET naming a trusted document (`documentId`, or APQ's hash without a query) that wants JSON:
   * run as a JSON POST would be (a mutation is still refused on GET, by Yoga's onParse), and a
   * public one answered like a REST read.
   */
  async function getByDocument(x: Exchange, url: URL, mediaType: string): Promise<Answer> {
    const json = (name: string): Record<string, unknown> | undefined => {
      const value = url.searchParams.get(name)
      if (value === null || value === '') return undefined
      let parsed: unknown
      try {
        parsed = JSON.parse(value)
      } catch {
        throw new AppError('bad_request', `The ${name} parameter must be a JSON object.`)
      }
      if (!isJsonObject(parsed)) throw new AppError('bad_request', `The ${name} parameter must be a JSON object.`)
      return parsed
    }
    const params: Params = {
      documentId: url.searchParams.get('documentId') ?? undefined,
      operationName: url.searchParams.get('operationName') || undefined,
      variables: json('variables'),
      extensions: json('extensions'),
    }
    const kind = classOfParams(params)
    x.keyManagement = kind.keyManagement
    await admitted(x)
    if (!kind.public) return own(x, kind, params, mediaType)
    return shared(
      x,
      graphqlGetCacheKey(x.header('accept'), x.target),
      kind,
      params,
      mediaType,
      (r) => ({ ...r, etag: etagOf(r.body), cacheControl: PUBLIC_CACHE_CONTROL, vary: 'Accept' }),
      (r) => publicAnswer(x, r),
    )
  }

  return (x) => {
    x.route = '/graphql'
    if (x.method === 'POST') {
      if (jsonContentType(x.header('content-type'))) return post(x)
      // A body not read here (a form post): what it selects is unknown, so it is answered as key
      // management would be (no-store, no wildcard CORS).
      x.keyManagement = true
      return viaYoga(x, undefined)
    }
    const url = new URL(x.url)
    const query = url.searchParams.get('query')
    if (x.method === 'GET' && query === null && (url.searchParams.has('documentId') || url.searchParams.has('extensions'))) {
      const accept = x.header('accept')
      const mediaType = STREAMING_OR_PAGE.test(accept ?? '') ? undefined : regularMediaType(accept)
      const text = documents.textOf({ documentId: url.searchParams.get('documentId') ?? undefined, extensions: safeJson(url.searchParams.get('extensions')) })
      const kind = text === undefined ? undefined : classOf(text, url.searchParams.get('operationName') || undefined)
      if (mediaType && !kind?.subscription) return getByDocument(x, url, mediaType)
      x.keyManagement = kind?.keyManagement ?? false
      return viaYoga(x, kind)
    }
    const kind = query === null ? undefined : classOf(query, url.searchParams.get('operationName') ?? undefined)
    x.keyManagement = kind?.keyManagement ?? false
    return viaYoga(x, x.method === 'GET' ? kind : undefined)
  }
}

/** A query parameter's JSON, or undefined when it is absent or not JSON (the step that reads it says so). */
function safeJson(value: string | null): unknown {
  if (value === null) return undefined
  try {
    return JSON.parse(value)
  } catch {
    return undefined
  }
}
