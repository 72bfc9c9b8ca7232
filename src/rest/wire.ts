import { z } from 'zod'
import { ERROR_CODES } from '../core/errors.js'
import { AmountString, TimestampString } from '../core/formats.js'

// The REST wire format as zod schemas. They describe response bodies for the OpenAPI document
// (converted to JSON Schema 2020-12) and type the routes' `shape` functions, so a body that drifts
// from its documented schema fails to compile; the contract tests check real responses too.

/** Schemas that the OpenAPI document lists under `components.schemas`, by name. */
export const components = new Map<string, z.ZodType>()

/** Registers `schema` as a named component (referenced with `$ref` wherever it is used). */
export function component<T extends z.ZodType>(name: string, schema: T): T {
  if (components.has(name) && components.get(name) !== schema) throw new Error(`OpenAPI component ${name} is defined twice`)
  components.set(name, schema)
  return schema
}

export const Amount = component('Amount', AmountString)

export const Timestamp = component('Timestamp', TimestampString)

export const Percent = z.number().meta({ description: 'Percent, 0-100.' })

export const ServerTime = z.int().meta({ description: 'The server clock when the response was made, Unix time in milliseconds.' })

export const ErrorBody = component(
  'Error',
  z
    .object({
      status: z.literal('error'),
      error: z.object({
        code: z.enum(ERROR_CODES as [string, ...string[]]).meta({ description: 'Machine-readable; the same codes as GraphQL `extensions.code`.' }),
        message: z.string().meta({ description: 'A sentence for people; never a stack trace.' }),
      }),
      server_time_ms: ServerTime,
    })
    .meta({ description: 'The one error body of every REST route.' }),
)

/** The spec's envelope of key-management and operator responses: `{status:"ok", data, server_time_ms}`. */
export function envelope<T extends z.ZodType>(data: T) {
  return z.object({ status: z.literal('ok'), data, server_time_ms: ServerTime })
}

// ---------------------------------------------------------------------------------------------
// One wire shape, written once: a route's response schema (snake_case, above) also gives the
// GraphQL selection its document asks for and the type of the GraphQL data (camelCase); the body
// is that data with its keys in snake_case.

/** `redeem_24h_threshold_pct_of_aum` → `redeem24hThresholdPctOfAum` (the GraphQL field of a wire field). */
export const camelOf = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

const snakeNames = new Map<string, string>()
/** `redeem24hThresholdPctOfAum` → `redeem_24h_threshold_pct_of_aum` (the wire field of a GraphQL field). */
export const snakeOf = (key: string) => {
  let snake = snakeNames.get(key)
  if (snake === undefined) {
    // Percentile names (`p50`, `p90`: decisions §14's `eta`) are the same in both cases.
    snake = /^p[0-9]+$/.test(key) ? key : key.replace(/([a-z])(?=[A-Z0-9])|([0-9][a-z]*)(?=[A-Z])/g, '$1$2_').toLowerCase()
    // Field names come from the routes' own documents: a few dozen (aliases are GraphQL clients', never REST's).
    if (snakeNames.size < 1024) snakeNames.set(key, snake)
  }
  return snake
}

type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S
/** The GraphQL (camelCase) shape of a wire (snake_case) shape. */
export type CamelKeys<T> = T extends readonly (infer U)[]
  ? CamelKeys<U>[]
  : T extends object
    ? { [K in keyof T as K extends string ? Camel<K> : K]: CamelKeys<T[K]> }
    : T

/** GraphQL data as the wire answers it: every key in snake_case, values untouched. */
export function snakeKeys<T>(value: CamelKeys<T>): T {
  if (Array.isArray(value)) return value.map((v) => snakeKeys(v)) as T
  if (typeof value !== 'object' || value === null) return value as T
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[snakeOf(k)] = snakeKeys(v as never)
  return out as T
}

/** The object schema inside nullable/optional wrappers, or undefined for a scalar. */
function objectShape(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  let s = schema as z.ZodType & { shape?: Record<string, z.ZodType>; unwrap?: () => z.ZodType }
  while (!s.shape && typeof s.unwrap === 'function') s = s.unwrap() as typeof s
  if (s instanceof z.ZodArray) return objectShape(s.element as z.ZodType)
  return s.shape
}

/** The GraphQL selection (camelCase fields, nested objects in braces) that yields `schema` once snake-cased. */
export function selectionOf(schema: z.ZodType): string {
  const shape = objectShape(schema)
  if (!shape) throw new Error('selectionOf needs an object schema')
  return Object.entries(shape)
    .map(([key, inner]) => {
      const nested = objectShape(inner)
      return nested ? `${camelOf(key)} { ${selectionOf(inner)} }` : camelOf(key)
    })
    .join(' ')
}

/** A Relay connection as a REST page: its nodes (reshaped) and the cursor of the next page, null on the last. */
export function page<N, T>(connection: { edges: { node: N }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } }, item: (node: N) => T) {
  return { items: connection.edges.map((e) => item(e.node)), next_cursor: connection.pageInfo.hasNextPage ? connection.pageInfo.endCursor : null }
}
