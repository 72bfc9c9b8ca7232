import { badRequest } from '../core/errors.js'
import { logger } from '../core/log.js'
import { keyUsageFlushes } from '../core/metrics.js'
import type { Db } from '../db/client.js'
import { deleteUsageBefore, type FlushUsageParams, usageRows } from './store.js'

// What verifications leave behind (docs/spec/decisions.md §13): a key's `lastUsedAt` and its
// verification counts per UTC day and outcome. A verification only touches two in-memory maps
// (no SQL, no await on its path); a timer writes what piled up in one statement
// (FLUSH_USAGE_SQL in src/keys/store.ts). `lastUsedAt` is written at most once a minute per key
// by an instance (it is sent only then), and the statement itself only moves it forward by a
// minute or more, so the row changes at most once a minute per key across all instances. The
// value is therefore a successful verification's time at most a minute older than the newest one.
// Counts not yet written when a process dies (at most one flush interval's) are lost; close()
// writes them on a clean stop.

/** What a verification of a known key answered. */
export type VerifyOutcome = 'active' | 'revoked' | 'expired' | 'not_whitelisted' | 'ip_not_allowed'

export const VERIFY_OUTCOMES: readonly VerifyOutcome[] = ['active', 'revoked', 'expired', 'not_whitelisted', 'ip_not_allowed']

/** `lastUsedAt` moves at most this often per key. */
export const LAST_USED_INTERVAL_MS = 60_000

const DAY_MS = 86_400_000

/** Writes one batch; resolves with the rows it changed. */
export type UsageWriter = (params: FlushUsageParams) => Promise<{ lastUsed: number; counted: number }>

export interface UsageRecorder {
  /** A verification of key `keyId` at `atMs` answered `outcome` (hot path: two map updates). */
  record(keyId: string, outcome: VerifyOutcome, atMs: number): void
  /** Writes what piled up (one statement, none when nothing did); a failed write is kept for the next one. */
  flush(): Promise<void>
  /** Stops the timer and writes what is left. */
  close(): Promise<void>
}

export interface UsageRecorderOptions {
  write: UsageWriter
  /** How often the batch is written (0: only by flush() and close()). */
  flushMs: number
}

export function createUsageRecorder({ write, flushMs }: UsageRecorderOptions): UsageRecorder {
  // `${keyId} ${day} ${outcome}` → count since the last write.
  let counts = new Map<string, number>()
  // keyId → newest successful verification not written yet.
  let pending = new Map<string, number>()
  // keyId → the last `lastUsedAt` this instance wrote (entries older than a minute are dropped).
  const written = new Map<string, number>()
  let running: Promise<void> = Promise.resolve()
  let lastWarning = 0

  async function writeOnce(): Promise<void> {
    const due: [string, number][] = []
    for (const [keyId, at] of pending) {
      const last = written.get(keyId)
      if (last === undefined || at - last >= LAST_USED_INTERVAL_MS) due.push([keyId, at])
    }
    if (due.length === 0 && counts.size === 0) return
    const batch = counts
    counts = new Map()
    for (const [keyId] of due) pending.delete(keyId)
    const params: FlushUsageParams = [due.map(([k]) => k), due.map(([, at]) => String(at)), [], [], [], []]
    for (const [key, n] of batch) {
      const [keyId, day, outcome] = key.split(' ') as [string, string, string]
      params[2].push(keyId)
      params[3].push(day)
      params[4].push(outcome)
      params[5].push(String(n))
    }
    try {
      await write(params)
      keyUsageFlushes.inc({ result: 'written' })
      for (const [keyId, at] of due) written.set(keyId, at)
    } catch (err) {
      // Kept for the next flush: counts add up, a newer use wins.
      for (const [key, n] of batch) counts.set(key, (counts.get(key) ?? 0) + n)
      for (const [keyId, at] of due) if ((pending.get(keyId) ?? 0) < at) pending.set(keyId, at)
      keyUsageFlushes.inc({ result: 'failed' })
      if (Date.now() - lastWarning > 30_000) {
        lastWarning = Date.now()
        logger.warn({ err: err instanceof Error ? { message: err.message } : String(err) }, 'API key usage could not be written; kept for the next flush')
      }
    }
    // Only writes less than a minute older than the newest can still hold a key back.
    let newest = 0
    for (const at of written.values()) if (at > newest) newest = at
    for (const [keyId, at] of written) if (newest - at >= LAST_USED_INTERVAL_MS) written.delete(keyId)
  }

  // One flush at a time: a flush asked for during another runs after it.
  const flush = () => {
    running = running.then(writeOnce)
    return running
  }
  const timer = flushMs > 0 ? setInterval(() => void flush(), flushMs) : undefined
  timer?.unref()

  return {
    record(keyId, outcome, atMs) {
      const key = `${keyId} ${Math.floor(atMs / DAY_MS)} ${outcome}`
      counts.set(key, (counts.get(key) ?? 0) + 1)
      if (outcome === 'active' && (pending.get(keyId) ?? 0) < atMs) pending.set(keyId, atMs)
    },
    flush,
    async close() {
      if (timer) clearInterval(timer)
      await flush()
      pending = new Map()
    },
  }
}

// ---------------------------------------------------------------------------------------------
// What the owner sees, and the retention job

/** Usage is kept, and can be asked for, this many UTC days back (today included). */
export const USAGE_RETENTION_DAYS = 90

/** The UTC date (`YYYY-MM-DD`) `days - 1` days before `now`'s: the first day of a `days`-day window ending today. */
export function firstDayOf(now: Date, days: number): string {
  return new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS - (days - 1) * DAY_MS).toISOString().slice(0, 10)
}

/** Deletes usage rows of days before the retention window; how many went. Every instance may run it (idempotent). */
export function pruneUsage(db: Db, now: Date): Promise<number> {
  return deleteUsageBefore(db, firstDayOf(now, USAGE_RETENTION_DAYS))
}

/** One key's verifications on one UTC day, by outcome. */
export interface UsageDay {
  day: string
  keyId: string
  keyPrefix: string
  name: string | null
  counts: Record<VerifyOutcome, number>
  total: number
}

/** How many days the usage answer covers when not asked. */
export const USAGE_DEFAULT_DAYS = 30

const badDays = () => badRequest(`days must be an integer from 1 to ${USAGE_RETENTION_DAYS}.`)

/** The `days` argument: an integer from 1 to 90, default 30. */
export function checkUsageDays(days: number | null | undefined): number {
  if (days === null || days === undefined) return USAGE_DEFAULT_DAYS
  if (!Number.isInteger(days) || days < 1 || days > USAGE_RETENTION_DAYS) throw badDays()
  return days
}

/** The REST `days` parameter: decimal digits without a leading zero (`01`, `1.5`, `` are 400), then the range. */
export function parseUsageDays(text: string | undefined): number {
  if (text === undefined) return USAGE_DEFAULT_DAYS
  if (!/^[1-9]\d{0,2}$/.test(text)) throw badDays()
  return checkUsageDays(Number(text))
}

/** The wallet's verifications per key and UTC day over the last `days` days (today included), newest day first; days without any are left out. */
export async function usageOf(db: Db, wallet: string, days: number, now: Date): Promise<{ days: number; since: string; items: UsageDay[] }> {
  const since = firstDayOf(now, days)
  const items: UsageDay[] = []
  for (const row of await usageRows(db, wallet, since)) {
    let item = items.at(-1)
    if (!item || item.day !== row.day || item.keyId !== row.key_id) {
      item = {
        day: row.day,
        keyId: row.key_id,
        keyPrefix: row.key_prefix,
        name: row.name,
        counts: Object.fromEntries(VERIFY_OUTCOMES.map((o) => [o, 0])) as Record<VerifyOutcome, number>,
        total: 0,
      }
      items.push(item)
    }
    const n = Number(row.count)
    item.counts[row.outcome as VerifyOutcome] = n
    item.total += n
  }
  return { days, since, items }
}
