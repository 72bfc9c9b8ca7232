import { badRequest } from '../core/errors.js'
import { parsePageSize } from '../core/page.js'
import { parseTimestamp } from '../core/timestamp.js'

// Query-parameter parsing for REST routes: malformed or out-of-range values are a 400, never
// clamped or ignored (docs/spec/decisions.md §4).

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

/** A JSON Schema (2020-12) object, as OpenAPI 3.1 embeds it. */
export type JsonSchema = Record<string, unknown>

/**
 * One path or query parameter of a REST route: how it is documented and how it is read, in one
 * place. The shim parses every declared parameter with `parse` before the route runs, and the
 * OpenAPI document shows `schema` and `description`, both built from the same constants, so the
 * reference cannot promise a range or a value the route does not accept.
 */
export interface Param<T = unknown> {
  description: string
  /** The schema of the parameter's text, as OpenAPI shows it. */
  schema: JsonSchema
  example?: string
  /** Reads the raw text (undefined when absent); throws `bad_request` on a malformed value. */
  parse(text: string | undefined, name: string): T
}

export type Params = Record<string, Param>

/** The parsed values of a set of parameters, by name. */
export type ParsedParams<P extends Params> = { [K in keyof P]: P[K] extends Param<infer T> ? T : never }

/** A page size (src/core/page.ts: the one policy). */
export function limitParam(range: { min: number; max: number; default: number }, description: string): Param<number> {
  return {
    description,
    schema: { type: 'integer', minimum: range.min, maximum: range.max, default: range.default },
    parse: (text, name) => parsePageSize(text, name),
  }
}

/** A value from a fixed set; absent = `fallback` (or undefined without one). */
export function choiceParam<const T extends string>(values: readonly T[], description: string, fallback: T): Param<T>
export function choiceParam<const T extends string>(values: readonly T[], description: string): Param<T | undefined>
export function choiceParam<const T extends string>(values: readonly T[], description: string, fallback?: T): Param<T | undefined> {
  return {
    description,
    schema: { type: 'string', enum: [...values], ...(fallback === undefined ? {} : { default: fallback }) },
    parse: (text, name) => parseChoice(name, text, values, fallback as T),
  }
}

/** Optional free text that must not be empty when given. */
export function textParam(description: string, example?: string): Param<string | undefined> {
  return { description, schema: { type: 'string', minLength: 1 }, example, parse: (text, name) => parseText(name, text) }
}

/** A path segment taken as it is (Hono only matches non-empty segments). */
export function segmentParam(description: string, example?: string): Param<string> {
  return { description, schema: { type: 'string', minLength: 1 }, example, parse: (text) => text ?? '' }
}

/** An optional RFC 3339 timestamp (src/core/timestamp.ts: the one strict reading). */
export function timestampParam(description: string, example?: string): Param<Date | undefined> {
  return {
    description,
    schema: { type: 'string', format: 'date-time' },
    example,
    parse: (text, name) => {
      if (text === undefined) return undefined
      const r = parseTimestamp(text)
      if (!r.ok) throw badRequest(`${name} ${r.error}.`)
      return new Date(r.ms)
    },
  }
}

/** A path segment read by `parse` (a chain id, a contract address): malformed is a 400 naming it. */
export function pathParam<T>(description: string, example: string, parse: (text: string, name: string) => T): Param<T> {
  return { description, schema: { type: 'string', minLength: 1 }, example, parse: (text, name) => parse(text ?? '', name) }
}
