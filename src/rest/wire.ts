import { z } from 'zod'
import { ERROR_CODES } from '../core/errors.js'

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

export const Amount = component(
  'Amount',
  z
    .string()
    .regex(/^-?(0|[1-9]\d*)(\.\d*[1-9])?$/)
    .meta({
      description: 'An exact decimal amount in plain notation: "." separator, no exponent, no thousands separators, no trailing fractional zeros.',
      examples: ['1.5', '0', '1234567.000000000000000001'],
    }),
)

export const Timestamp = component(
  'Timestamp',
  z.iso.datetime({ precision: 3 }).meta({ description: 'RFC 3339 in UTC with milliseconds.', examples: ['2026-11-21T12:00:00.000Z'] }),
)

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
