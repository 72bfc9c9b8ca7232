import type { ChangeFeed } from '../db/listen.js'
import { watchDataChanges } from '../importer/changes.js'
import type { SourceStatus } from '../sources/status.js'
import { readDataTimes, type DataTimes, type FreshnessDb } from './store.js'

// Freshness (docs/spec/decisions.md §10): how old the data is, for /v1/status, GraphQL `meta`,
// the Data-As-Of header of every read and the vaultgate_data_age_seconds gauge. The header is
// on every answer, so the times are kept in memory: read once, then again only after an import
// (the data-change NOTIFY every import sends on commit, src/importer/changes.ts, or this
// process' own import hook) — no statement per request. While the change feed is down, an
// import elsewhere could go unheard: the value is then re-read when older than a second.

export type { DataTimes } from './store.js'

export interface FreshnessStatus extends DataTimes {
  /** The chain sources' state (src/sources/status.ts); [] without a sources file. */
  sources: SourceStatus[]
  /** `dataAsOf` is older than STALE_AFTER_MS (or there is no data); never with STALE_AFTER_MS=0. */
  stale: boolean
}

export interface Freshness {
  /**
   * The times this process knows: synchronous once read (the common case), a promise while
   * (re)reading, which rejects when the read fails (never a guess: an answer without its times fails).
   */
  current(): DataTimes | Promise<DataTimes>
  /**
   * The whole status at `now`, with `times` when the caller holds them already (reads the sources'
   * state: for the status answers, not every request).
   */
  status(now: Date, times?: DataTimes): Promise<FreshnessStatus>
  /** Whether data as of `dataAsOf` is stale at `now` (decisions §10). */
  isStale(dataAsOf: Date | null, now: Date): boolean
  /** An import committed (this process' own hook): the next reader re-reads. */
  invalidate(): void
  stop(): Promise<void>
}

/** Without the change feed, a value is trusted this long. */
const UNWATCHED_MAX_AGE_MS = 1000

export function createFreshness({
  db,
  staleAfterMs,
  sources = async () => [],
  changes,
  monotonic = performance.now.bind(performance),
}: {
  db: FreshnessDb
  /** STALE_AFTER_MS: 0 = never stale. */
  staleAfterMs: number
  sources?: () => Promise<SourceStatus[]>
  /** The process' LISTEN connection; without it (or while it is down) values expire after a second. */
  changes?: ChangeFeed
  monotonic?: () => number
}): Freshness {
  let value: DataTimes | undefined
  let readAt = 0
  /** Cleared by a change: the value may predate it. */
  let valid = false
  let live = false
  let loading: Promise<DataTimes> | undefined
  let generation = 0

  const load = (): Promise<DataTimes> => {
    if (loading) return loading
    const started = generation
    const reading = readDataTimes(db).then((times) => {
      value = times
      readAt = monotonic()
      // A change heard while reading may have committed after the read's snapshot: read again next time.
      valid = started === generation
      return times
    })
    loading = reading
    // A failure is the callers' (each read answer fails with it: src/freshness/answer.ts); the next caller reads again.
    const settled = () => {
      if (loading === reading) loading = undefined
    }
    reading.then(settled, settled)
    return reading
  }

  const invalidate = () => {
    generation++
    valid = false
    loading = undefined
  }

  const feed = changes
    ? watchDataChanges(changes, {
        onChange: invalidate,
        onLive: (up) => {
          live = up
          invalidate()
        },
      })
    : undefined

  const isStale = (dataAsOf: Date | null, now: Date) => staleAfterMs > 0 && (dataAsOf === null || now.getTime() - dataAsOf.getTime() > staleAfterMs)

  const current = (): DataTimes | Promise<DataTimes> => {
    if (value && valid && (live || monotonic() - readAt < UNWATCHED_MAX_AGE_MS)) return value
    return load()
  }

  return {
    current,
    isStale,
    invalidate,
    async status(now, known) {
      const [times, list] = await Promise.all([known ?? current(), sources()])
      return { ...times, sources: list, stale: isStale(times.dataAsOf, now) }
    },
    stop: async () => {
      await feed?.stop()
    },
  }
}
