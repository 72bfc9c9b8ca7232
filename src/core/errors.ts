import { GraphQLError } from 'graphql'

/** Every error code a REST answer can carry (docs/spec/decisions.md §4, spec §7); GraphQL answers them too. */
export type RestErrorCode =
  | 'bad_request'
  | 'not_found'
  | 'rate_limited'
  | 'internal'
  | 'unavailable'
  | 'unauthorized'
  | 'not_whitelisted'
  | 'wallet_required'
  | 'wallet_not_connected'
  | 'payload_too_large'
  | 'unsupported_media_type'

/** Codes only /graphql answers: its trusted documents (docs/spec/decisions.md §15). */
export type GraphqlOnlyErrorCode = 'persisted_query_only' | 'persisted_query_not_found'

/** Every error code a client can see. */
export type ErrorCode = RestErrorCode | GraphqlOnlyErrorCode

/** The REST error body's codes (src/rest/wire.ts). */
export const ERROR_CODES: readonly RestErrorCode[] = [
  'bad_request',
  'not_found',
  'rate_limited',
  'internal',
  'unavailable',
  'unauthorized',
  'not_whitelisted',
  'wallet_required',
  'wallet_not_connected',
  'payload_too_large',
  'unsupported_media_type',
]
const KNOWN_CODES = new Set<string>([...ERROR_CODES, 'persisted_query_only', 'persisted_query_not_found'])

export const isErrorCode = (code: unknown): code is ErrorCode => typeof code === 'string' && KNOWN_CODES.has(code)

/**
 * By shape, not `instanceof`: graphql 16 ships CommonJS and ESM builds, and a process (or a test
 * runner) can hold both, each with its own GraphQLError class.
 */
export function isGraphQLError(e: unknown): e is GraphQLError {
  return e instanceof Error && e.name === 'GraphQLError'
}

/** An AppError, or any GraphQLError carrying one of our codes (e.g. after graphql-js re-wrapped it). */
export function asAppError(e: unknown): AppError | undefined {
  if (e instanceof AppError) return e
  if (!isGraphQLError(e) || !isErrorCode(e.extensions?.code)) return undefined
  const http = e.extensions.http as { status?: number; headers?: Record<string, string> } | undefined
  return new AppError(e.extensions.code, e.message, { status: http?.status, headers: http?.headers })
}

export const defaultStatus: Readonly<Record<ErrorCode, number>> = {
  bad_request: 400,
  not_found: 404,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  unauthorized: 401,
  not_whitelisted: 403,
  wallet_required: 403,
  wallet_not_connected: 403,
  // The import's body rules (src/http/import-body.ts): larger than its limit, read or inflated;
  // not JSON, or in an encoding other than gzip.
  payload_too_large: 413,
  unsupported_media_type: 415,
  persisted_query_only: 400,
  persisted_query_not_found: 404,
}

/**
 * An expected failure. It is a GraphQLError so Yoga passes it through unmasked with
 * `extensions.code`; REST turns it into the standard error body with `status`.
 */
export class AppError extends GraphQLError {
  readonly code: ErrorCode
  readonly status: number

  constructor(code: ErrorCode, message: string, options: { status?: number; headers?: Record<string, string> } = {}) {
    const status = options.status ?? defaultStatus[code]
    super(message, { extensions: { code, http: { status, headers: options.headers } } })
    this.code = code
    this.status = status
  }
}

/** Longest client-supplied value an error message repeats. */
export const MAX_ECHO = 128

/**
 * A client-supplied value (a path segment, a query parameter, a field name) as an error message may
 * repeat it: quoted, unless it is longer than MAX_ECHO or holds a secret-like run of 40 letters and
 * digits (a pasted API key, a token), which never come back, to the client or to the logs and
 * proxies its answers pass through.
 */
export function quoted(value: string): string {
  return repeatable(value) ? JSON.stringify(value) : withheld(value)
}

const repeatable = (value: string) => value.length <= MAX_ECHO && !/[A-Za-z0-9]{40,}/.test(value)
const withheld = (value: string) => `(a value of ${value.length} characters, not repeated here)`

/** A client-supplied name (a path segment, a GraphQL alias) as a log field may hold it: itself, unless quoted() would withhold it. */
export const echoSafe = (value: string): string => (repeatable(value) ? value : withheld(value))

/**
 * A message written by someone else (graphql-js, PostgreSQL, a driver) that may repeat client
 * values: every double-quoted value quoted() would withhold, and every run of more than MAX_ECHO
 * non-space characters, is replaced by its length. graphql-js quotes what it repeats
 * (`Variable "$x" got invalid value "…"`), as does PostgreSQL (`invalid input syntax for type
 * uuid: "…"`); unquoted runs catch the rest (a long number literal, an object key, a pasted key).
 */
export function withoutLongEchoes(message: string): string {
  return message
    .replace(/"(?:[^"\\]|\\.)*"/g, (literal) => {
      let value: string
      try {
        value = JSON.parse(literal) as string
      } catch {
        value = literal.slice(1, -1)
      }
      return repeatable(value) ? literal : withheld(value)
    })
    .replace(new RegExp(`[^\\s]{${MAX_ECHO + 1},}|[A-Za-z0-9]{40,}`, 'g'), withheld)
}

export const badRequest = (message: string) => new AppError('bad_request', message)
export const notFound = (message: string) => new AppError('not_found', message)

export function errorBody(code: ErrorCode, message: string) {
  return { status: 'error' as const, error: { code, message }, server_time_ms: Date.now() }
}

/** Database errors that mean "the database is not reachable right now" rather than a bug. */
export function isUnavailableError(error: unknown): boolean {
  const seen = new Set<unknown>()
  let e: unknown = error
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e)
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown }
    if (
      typeof code === 'string' &&
      /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|57P01|57P02|57P03|57014|08\w{3}|P1001|P1002|P1008|P1017|P2024)$/.test(code)
    )
      return true
    if (name === 'DriverAdapterError' && typeof message === 'string' && /connect|timeout|terminat|closed/i.test(message)) return true
    // The driver adapter's verdict (a DriverAdapterError's cause, or Prisma's P2010 meta for raw queries).
    const kind = (e as { kind?: unknown }).kind
    if (typeof kind === 'string' && /^(ConnectionClosed|DatabaseNotReachable|SocketTimeout|TooManyConnections)$/.test(kind)) return true
    if (
      typeof message === 'string' &&
      /(Connection terminated|timeout exceeded when trying to connect|Can't reach database|canceling statement due to statement timeout|Client has encountered a connection error|Server has closed the connection|Query read timeout|Client was closed and is not queryable)/i.test(
        message,
      )
    )
      return true
    const next = e as { cause?: unknown; originalError?: unknown; meta?: { driverAdapterError?: unknown } }
    e = next.cause ?? next.originalError ?? next.meta?.driverAdapterError
  }
  return false
}

/**
 * Text PostgreSQL cannot store (a NUL character, 22021; an untranslatable one, 22P05) can only
 * have come from the client: a bad request, not a bug.
 */
export function isUnstorableTextError(error: unknown): boolean {
  const seen = new Set<unknown>()
  let e: unknown = error
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e)
    const { code, message } = e as { code?: unknown; message?: unknown }
    if (code === '22021' || code === '22P05') return true
    if (typeof message === 'string' && /Code: `22(021|P05)`/.test(message)) return true
    e = (e as { cause?: unknown }).cause ?? (e as { originalError?: unknown }).originalError
  }
  return false
}

/** Maps any thrown value to the AppError a client may see; unknown errors become `internal`. */
export function toAppError(error: unknown): AppError {
  const app = asAppError(error)
  if (app) return app
  // Pothos rejects malformed connection arguments (a cursor it cannot decode, a negative `first`)
  // with its own GraphQLError subclass: a client mistake, not a bug.
  if (error instanceof Error && error.name === 'PothosValidationError') {
    // Pothos echoes a bad cursor back ("Invalid cursor: <cursor>"): whatever a client pasted there
    // (a key, a token, 100 kB) must not come back in the answer, nor reach proxies' logs through it.
    if (error.message.startsWith('Invalid cursor')) return new AppError('bad_request', 'Invalid cursor: it is not one this server issued for this list.')
    return new AppError('bad_request', error.message)
  }
  if (isGraphQLError(error) && error.originalError) return toAppError(error.originalError)
  if (isUnavailableError(error)) return new AppError('unavailable', 'The database is unavailable; try again shortly.')
  if (isUnstorableTextError(error)) return new AppError('bad_request', 'Text values must not contain NUL (U+0000) characters.')
  return new AppError('internal', 'Internal server error.')
}
