import type { z } from 'zod'
import { badRequest } from './errors.js'

// Request bodies are declared once, as zod schemas in their feature's folder (src/keys/inputs.ts,
// src/webhooks/inputs.ts): the REST route or admin handler parses with it, the GraphQL resolver
// validates its arguments with it, and the OpenAPI document shows it. The messages are the
// schema's own (`error` options), so each names its field the same way on every surface.

/** How an issue reads in the `bad_request` message (default: the schema's own message). */
export type DescribeIssue = (issue: z.core.$ZodIssue) => string

/**
 * `value` parsed by `schema`, or AppError('bad_request') with the message of its first issue. A
 * field the body may not hold is reported before the values of the others: a misspelt field
 * explains the rest.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, describe: DescribeIssue = (issue) => issue.message): z.output<S> {
  const parsed = schema.safeParse(value, { reportInput: true })
  if (parsed.success) return parsed.data
  const issues = parsed.error.issues
  throw badRequest(describe(issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0]!))
}
