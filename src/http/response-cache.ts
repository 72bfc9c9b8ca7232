import { cacheLookups } from '../core/metrics.js'

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
  /** Request headers the body depends on beyond the URL (a GraphQL GET's Accept chooses its media type). */
  vary?: string
  /** The route pattern that produced it (a hit's log line and metrics are labelled with it). */
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
