import { expect } from 'vitest'

/** The one REST error body (decisions.md §4), with any server time. */
export const errorBody = (code: string, message: string) => ({ status: 'error', error: { code, message }, server_time_ms: expect.any(Number) })

/** The spec's success envelope of key management and operator routes, with any server time. */
export const okBody = (data: unknown) => ({ status: 'ok', data, server_time_ms: expect.any(Number) })

/**
 * A GraphQL answer whose operation ran: its data and what it cost against the limit (decisions
 * §15; the numbers themselves are asserted in test/graphql/protection.test.ts).
 */
export const answered = (data: unknown) => ({ data, extensions: { cost: { requested: expect.any(Number), limit: expect.any(Number) } } })
