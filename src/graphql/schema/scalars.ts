import { Kind } from 'graphql'
import { builder } from '../builder.js'
import { badRequest } from '../../core/errors.js'
import { formatAmount, parseAmount } from '../../core/decimal.js'

// @specifiedBy (decisions §15): where each wire format is defined, for typed clients (GraphQL Code
// Generator maps them: docs/graphql-clients.md). Decimal's plain notation is XML Schema's canonical
// decimal (no exponent, no trailing fractional zeros); DateTime is RFC 3339 as the GraphQL
// Scalars date-time specification profiles it; the two integers count ECMAScript's milliseconds.

builder.scalarType('Decimal', {
  specifiedByURL: 'https://www.w3.org/TR/xmlschema11-2/#decimal',
  description:
    'An exact decimal amount as a string in plain notation: "." separator, no exponent, no thousands separators, no trailing fractional zeros (e.g. "1.5", "0", "1234567.000000000000000001").',
  serialize: (value) => formatAmount(value),
  parseValue: (value) => {
    const parsed = parseAmount(value, { allowNegative: true })
    if (!parsed.ok) throw badRequest(`Decimal ${parsed.error}.`)
    return parsed.value
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING) throw badRequest('Decimal must be given as a string.')
    const parsed = parseAmount(ast.value, { allowNegative: true })
    if (!parsed.ok) throw badRequest(`Decimal ${parsed.error}.`)
    return parsed.value
  },
})

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/

function parseDateTime(value: unknown): Date {
  if (typeof value !== 'string' || !RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
    throw badRequest('DateTime must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z".')
  }
  return new Date(value)
}

builder.scalarType('DateTime', {
  specifiedByURL: 'https://scalars.graphql.org/andimarek/date-time',
  description: 'An RFC 3339 timestamp in UTC with milliseconds, e.g. "2026-11-21T12:00:00.000Z".',
  serialize: (value) => (value instanceof Date ? value : new Date(String(value))).toISOString(),
  parseValue: parseDateTime,
  parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
})

function parseUnixMs(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw badRequest('UnixMs must be a non-negative integer (milliseconds since 1970-01-01T00:00:00Z).')
  return value
}

builder.scalarType('UnixMs', {
  specifiedByURL: 'https://tc39.es/ecma262/#sec-time-values-and-time-range',
  description: 'Unix time in milliseconds, as a JSON integer (beyond the 32-bit range of Int).',
  serialize: (value) => (value instanceof Date ? value.getTime() : value),
  parseValue: parseUnixMs,
  parseLiteral: (ast) => parseUnixMs(ast.kind === Kind.INT ? Number(ast.value) : undefined),
})

builder.scalarType('Milliseconds', {
  specifiedByURL: 'https://tc39.es/ecma262/#sec-time-values-and-time-range',
  description: 'A duration in milliseconds, as a JSON integer (beyond the 32-bit range of Int).',
  serialize: (value) => value,
  parseValue: (value) => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw badRequest('Milliseconds must be a non-negative integer.')
    return value
  },
})
