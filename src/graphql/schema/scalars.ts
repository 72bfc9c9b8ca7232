import { Kind } from 'graphql'
import { builder } from '../builder.js'
import { badRequest } from '../../core/errors.js'
import { formatAmount, parseAmount } from '../../core/decimal.js'

builder.scalarType('Decimal', {
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
  description: 'Unix time in milliseconds, as a JSON integer (beyond the 32-bit range of Int).',
  serialize: (value) => (value instanceof Date ? value.getTime() : value),
  parseValue: parseUnixMs,
  parseLiteral: (ast) => parseUnixMs(ast.kind === Kind.INT ? Number(ast.value) : undefined),
})

builder.scalarType('Milliseconds', {
  description: 'A duration in milliseconds, as a JSON integer (beyond the 32-bit range of Int).',
  serialize: (value) => value,
  parseValue: (value) => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw badRequest('Milliseconds must be a non-negative integer.')
    return value
  },
})
