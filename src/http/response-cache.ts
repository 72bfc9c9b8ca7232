import type { Context as HonoContext } from 'hono'
import { cacheLookups } from '../core/metrics.js'
import type { AppEnv } from './env.js'
import { Deadline, underDeadline } from '../core/deadlines.js'
import type { RequestScope } from '../graphql/context.js'
import type { OperationClass } from '../graphql/public-operations.js'
import { beginRead, type DataUse } from '../freshness/answer.js'
import type { Freshness } from '../freshness/status.js'

// A process-local cache of whole response bodies for public vault reads (REST routes marked
// `cache: public`, and GraphQL queries that only touch public types). Dashboards poll the same
// reads all day; a hit answers without GraphQL, Prisma or SQL.
//
// Freshness: every entry lives at most `ttlMs` (the backstop for values that change with the
// clock alone, such as the current composition when a snapshot dated in the future comes due, or
// a series bucket closing). For `staleMs` after that, an expired entry is still answered by `load`
// while one background computation replaces it (stale-while-revalidate), so a popular expensive
// read never makes its callers wait when it expires. Imports clear it at once, stale entries too:
// through the admin hook in this process, and in every other process or instance through
// PostgreSQL NOTIFY (src/importer/changes.ts, src/db/listen.ts). While the change feed is not connected, nothing is
// cached. Per-user and key-management responses are
// never stored: a GraphQL operation is cacheable only when every field it selects belongs to the
// public types below; REST routes opt in one by one.

export interface CachedResponse {
  body: string
  contentType: string
  etag?: string
  cacheControl?: string
  /** The route pattern that produced it (the early answers label their log line and metrics with it). */
  route?: string
  /** A read's Data-As-Of when it was computed (src/http/headers.ts dataAsOfHeaders): a cached answer keeps it. */
  dataAsOf?: string | null
}

interface Entry extends CachedResponse {
  /** Fresh (answered by `get` and `load`) until then. */
  expiresAt: number
  /** Answered by `load` while it is refreshed until then; dropped after. */
  staleUntil: number
  size: number
}

/**
 * Computes a response for the cache. `background` is true when nobody waits for the result (a
 * stale entry was answered and this refreshes it): the computation must then not depend on the
 * request that triggered it staying open, and its errors are nobody's to answer (they are dropped).
 */
export type Produce = (background: boolean) => Promise<CachedResponse | undefined>

export class ResponseCache {
  readonly #entries = new Map<string, Entry>()
  /** Answers being computed (in the foreground or as a refresh), so that one key is computed once at a time. */
  readonly #pending = new Map<string, Promise<CachedResponse | undefined>>()
  #bytes = 0
  #generation = 0
  /** False while the change feed is down: then nothing may be served from memory. */
  #live = true

  /** `staleMs`: how long after its TTL an entry may still be answered by `load` while it is refreshed (0 = never). */
  constructor(
    readonly ttlMs: number,
    readonly maxBytes: number,
    private readonly now: () => number = Date.now,
    readonly staleMs = 0,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0 && this.#live
  }

  /** A ticket taken before computing a response; `set` drops the result if the data changed meanwhile. */
  ticket(): number {
    return this.#generation
  }

  /** A fresh entry only: an expired one, even within its stale window, is `undefined` here (see `load`). */
  get(key: string): CachedResponse | undefined {
    if (!this.enabled) return undefined
    const now = this.now()
    const entry = this.#find(key, now)
    if (entry && entry.expiresAt > now) {
      cacheLookups.inc({ cache: 'response', result: 'hit' })
      return entry
    }
    cacheLookups.inc({ cache: 'response', result: 'miss' })
    return undefined
  }

  /** A fresh entry, or undefined without counting a miss (the caller falls back to `load`, which counts it). */
  hit(key: string): CachedResponse | undefined {
    if (!this.enabled) return undefined
    const entry = this.#entries.get(key)
    if (!entry || entry.expiresAt <= this.now()) return undefined
    cacheLookups.inc({ cache: 'response', result: 'hit' })
    return entry
  }

  set(key: string, response: CachedResponse, ticket: number): void {
    if (!this.enabled || ticket !== this.#generation) return
    const size = key.length + response.body.length
    if (size > this.maxBytes / 16) return
    const old = this.#entries.get(key)
    if (old) this.#delete(key, old)
    // Oldest first: Map iteration follows insertion order.
    for (const [k, e] of this.#entries) {
      if (this.#bytes + size <= this.maxBytes) break
      this.#delete(k, e)
    }
    const expiresAt = this.now() + this.ttlMs
    this.#entries.set(key, { ...response, expiresAt, staleUntil: expiresAt + this.staleMs, size })
    this.#bytes += size
  }

  /**
   * The answer for `key`: from memory, else from a computation already running for it, else from
   * `produce(false)` (stored when it returns a response; `undefined` = not storable, e.g. an error).
   * When an entry expires under load, one request recomputes it while the others wait for that
   * result instead of all hitting the database at once. A caller whose shared computation failed
   * or produced nothing gets `undefined` and answers on its own.
   *
   * Stale-while-revalidate: an entry expired less than `staleMs` ago is answered at once, and
   * `produce(true)` runs in the background (once per key at a time) to replace it. A refresh that
   * fails or produces nothing leaves the stale entry to the end of its window (the next load
   * within it tries again); a refresh that spans a `clear` is not stored.
   */
  async load(key: string, produce: Produce): Promise<CachedResponse | undefined> {
    const now = this.now()
    const entry = this.enabled ? this.#find(key, now) : undefined
    if (entry && entry.expiresAt > now) {
      cacheLookups.inc({ cache: 'response', result: 'hit' })
      return entry
    }
    if (entry) {
      cacheLookups.inc({ cache: 'response', result: 'stale' })
      if (!this.#pending.has(key)) void this.#refresh(key, produce)
      return entry
    }
    if (this.enabled) cacheLookups.inc({ cache: 'response', result: 'miss' })
    const running = this.#pending.get(key)
    if (running) return running.catch(() => undefined)
    const ticket = this.ticket()
    const computing = produce(false)
    this.#pending.set(key, computing)
    try {
      const response = await computing
      if (response) this.set(key, response, ticket)
      return response
    } finally {
      if (this.#pending.get(key) === computing) this.#pending.delete(key)
    }
  }

  /** Recomputes a stale entry nobody waits for; never rejects. */
  async #refresh(key: string, produce: Produce): Promise<void> {
    const ticket = this.ticket()
    // Async, so that a produce throwing synchronously becomes a rejection handled here.
    const computing = (async () => produce(true))()
    this.#pending.set(key, computing)
    try {
      const response = await computing
      if (response) this.set(key, response, ticket)
    } catch {
      // Nobody to answer: the stale entry stays until its window ends, and the next load retries.
    } finally {
      if (this.#pending.get(key) === computing) this.#pending.delete(key)
    }
  }

  /** The data changed: forget everything, including responses being computed right now. */
  clear(): void {
    this.#generation++
    this.#pending.clear()
    this.#entries.clear()
    this.#bytes = 0
  }

  /** Whether the change feed is connected; entries are dropped when it goes down. */
  setLive(live: boolean): void {
    if (!live) this.clear()
    this.#live = live
  }

  get size(): number {
    return this.#entries.size
  }

  /** The entry for `key` if it is fresh or within its stale window; one past it is dropped. */
  #find(key: string, now: number): Entry | undefined {
    const entry = this.#entries.get(key)
    if (!entry || entry.staleUntil > now) return entry
    this.#delete(key, entry)
    return undefined
  }

  #delete(key: string, entry: Entry) {
    this.#entries.delete(key)
    this.#bytes -= entry.size
  }
}

/** The cache key of a request URL: path and query string, without scheme and host. */
export function pathAndQuery(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  return start === -1 ? '/' : url.slice(start)
}

/** The cache key of a POST /graphql body. */
export const graphqlCacheKey = (accept: string | null | undefined, body: string) => `POST /graphql\n${accept ?? ''}\n${body}`

/** Runs a /graphql request through Yoga: `request` carries the body; `scope` its id and deadline. */
export type ExecuteGraphql = (request: Request, scope: RequestScope) => Promise<Response>

/**
 * POST /graphql in front of Yoga: a public query whose exact body (and Accept header) was answered
 * within the TTL is served from memory (or, just after, while it is refreshed: see `load`);
 * anything else goes to Yoga unchanged. Only answers without errors are stored. The body is read
 * once (Hono keeps it for every later reader, the early answers included); Yoga gets a copy of the
 * request carrying it. A background refresh runs on a detached copy with a deadline of its own.
 */
export function cachedGraphql(
  cache: ResponseCache,
  classOf: (query: string, operationName: string | undefined) => OperationClass,
  execute: ExecuteGraphql,
  freshness?: Freshness,
): (c: HonoContext<AppEnv>) => Promise<Response> {
  return async (c) => {
    const scope = (data?: DataUse): RequestScope => ({ requestId: c.get('requestId'), deadline: c.get('deadline'), data, client: c.get('client') })
    if (!(c.req.header('content-type') ?? '').includes('application/json')) {
      // A body this handler does not read (a form post): what it selects is unknown, so it is
      // answered as key management would be (no-store, no wildcard CORS).
      c.set('keyManagement', true)
      return execute(c.req.raw, scope())
    }
    const text = await c.req.text()
    const forward = (data?: DataUse) =>
      execute(new Request(c.req.url, { method: 'POST', headers: c.req.raw.headers, body: text, signal: c.req.raw.signal }), scope(data))
    let params: { query?: unknown; operationName?: unknown }
    try {
      params = JSON.parse(text) as typeof params
    } catch {
      return forward()
    }
    if (typeof params?.query !== 'string') return forward()
    const kind = classOf(params.query, typeof params.operationName === 'string' ? params.operationName : undefined)
    if (kind.keyManagement) c.set('keyManagement', true)
    /** Runs the operation for this caller; a read's Data-As-Of is that of the data it read (known once it ran). */
    const answerOwn = async () => {
      const data = await operationData(kind, freshness)
      const response = await forward(data)
      if (data) c.set('dataAsOf', data.header)
      return response
    }
    if (!cache.enabled || !kind.public) return answerOwn()
    const key = graphqlCacheKey(c.req.header('accept'), text)
    // The first caller's own response, when it is not storable (it must still reach that caller).
    let own: Response | undefined
    let ownData: DataUse | undefined
    const shared = await cache.load(key, async (background) => {
      const data = await operationData(kind, freshness)
      if (background) {
        // Nobody waits for this answer: an error or a non-200 is dropped, never shared.
        const detached = new Request(c.req.url, { method: 'POST', headers: c.req.raw.headers, body: text })
        return underDeadline(c.get('deadline')?.detached() ?? Deadline.in(60_000), async (deadline) => {
          const response = await execute(detached, { requestId: c.get('requestId'), deadline, data })
          if (response.status !== 200) {
            await response.body?.cancel().catch(() => {})
            return undefined
          }
          const body = await response.text()
          return body.includes('"errors":')
            ? undefined
            : { body, contentType: response.headers.get('content-type') ?? 'application/json', dataAsOf: data?.header }
        })
      }
      ownData = data
      const response = await forward(data)
      if (response.status !== 200) {
        own = response
        return undefined
      }
      const body = await response.text()
      const answer = { body, contentType: response.headers.get('content-type') ?? 'application/json', route: '/graphql', dataAsOf: data?.header }
      // An error is never stored (a raw `"errors":` cannot occur inside a JSON string, where quotes are escaped).
      if (body.includes('"errors":')) {
        own = new Response(body, { status: 200, headers: response.headers })
        return undefined
      }
      return answer
    })
    if (own) {
      if (ownData) c.set('dataAsOf', ownData.header)
      return own
    }
    if (shared) {
      if (shared.dataAsOf !== undefined) c.set('dataAsOf', shared.dataAsOf)
      return c.body(shared.body, 200, { 'Content-Type': shared.contentType })
    }
    return answerOwn()
  }
}

/**
 * What a GraphQL operation's Data-As-Of is computed from (decisions §10): for a read, the record of
 * the data it reads with the times, taken before it runs and passed into its context (a failure to
 * read them fails the request: src/freshness/answer.ts); key management has none. The one rule for
 * this route, the hot path's (src/http/hot/graphql.ts) and GET /graphql's (src/app.ts).
 */
export async function operationData(kind: OperationClass, freshness: Freshness | undefined): Promise<DataUse | undefined> {
  return kind.read && !kind.keyManagement ? beginRead(freshness) : undefined
}
