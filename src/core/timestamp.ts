// RFC 3339 timestamps as clients send them (docs/spec/decisions.md §3): one strict reading for the
// import (src/importer/document.ts) and for query parameters (src/rest/params.ts), so a calendar
// date that does not exist (31 April) is refused everywhere instead of rolling over.

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/
export const TIMESTAMP_ERROR = 'must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z"'

/** Milliseconds since the epoch of a UTC calendar time, or undefined when that time does not exist. */
export function utcMs(y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number | undefined {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d) // unlike Date.UTC, keeps years 0-99 as written
  if (date.getUTCDate() !== d) return undefined // 31 April, 29 February of a common year, …
  date.setUTCHours(h, mi, s, ms)
  return date.getTime()
}

/** Years 1-9999 only: both what PostgreSQL parses back and what toISOString writes plainly. */
const MIN_MS = utcMs(1, 1, 1)!
const MAX_MS = utcMs(9999, 12, 31, 23, 59, 59, 999)!

/**
 * An RFC 3339 timestamp as milliseconds since the epoch (sub-millisecond digits truncated: storage
 * keeps milliseconds), or the sentence saying why it is not one.
 */
export function parseTimestamp(v: unknown): { ok: true; ms: number } | { ok: false; error: string } {
  const m = typeof v === 'string' ? RFC3339.exec(v) : null
  if (!m) return { ok: false, error: TIMESTAMP_ERROR }
  const [, y, mo, d, h, mi, s, frac = '', sign, oh, om] = m
  const local = utcMs(+y!, +mo!, +d!, +h!, +mi!, +s!, +frac.slice(0, 3).padEnd(3, '0'))
  if (local === undefined || (sign && (+oh! > 23 || +om! > 59))) return { ok: false, error: TIMESTAMP_ERROR }
  const t = local - (sign === '-' ? -1 : 1) * (sign ? (+oh! * 60 + +om!) * 60_000 : 0)
  if (t < MIN_MS || t > MAX_MS) return { ok: false, error: 'must be between the years 1 and 9999' }
  return { ok: true, ms: t }
}
