import { Kind } from 'graphql'
import { builder } from '../builder.js'
import { badRequest } from '../errors.js'
import { formatAmount, parseAmount } from '../decimal.js'

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
