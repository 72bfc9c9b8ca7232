import { badRequest } from '../errors.js'

// Query-parameter parsing for REST routes: malformed or out-of-range values are a 400, never
// clamped or ignored (decisions.md §4).

/** An integer page size written in plain digits, within `range`; absent = `range.default`. */
export function parseLimit(text: string | undefined, range: { min: number; max: number; default: number }, name = 'limit'): number {
  if (text === undefined) return range.default
  const n = /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN
  if (!(n >= range.min && n <= range.max)) throw badRequest(`${name} must be an integer from ${range.min} to ${range.max}.`)
  return n
}

/** A value from a fixed set; absent = `fallback`. */
export function parseChoice<const T extends string>(name: string, text: string | undefined, values: readonly T[], fallback: T): T
export function parseChoice<const T extends string>(name: string, text: string | undefined, values: readonly T[]): T | undefined
export function parseChoice<const T extends string>(name: string, text: string | undefined, values: readonly T[], fallback?: T): T | undefined {
  if (text === undefined) return fallback
  if (values.includes(text as T)) return text as T
  throw badRequest(`${name} must be one of ${values.map((v) => `"${v}"`).join(', ')}.`)
}

/** Free text that must not be empty when given. */
export function parseText(name: string, text: string | undefined): string | undefined {
  if (text === '') throw badRequest(`${name} must not be empty.`)
  return text
}
