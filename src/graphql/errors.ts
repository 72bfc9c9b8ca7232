// createGraphQLError builds the error with Yoga's own graphql instance (a test runner may load a
// second copy of graphql, and Yoga only strips the internal `http` extension from its own errors).
import type { GraphQLError } from 'graphql'
import { createGraphQLError, type Plugin } from 'graphql-yoga'
import { echoSafe, isErrorCode, isGraphQLError, toAppError, withoutLongEchoes } from '../core/errors.js'
import { logger } from '../core/log.js'

/** The same error (nodes, source, positions, path) with another message and extensions. */
export function rebuildError(e: GraphQLError, message: string, extensions: GraphQLError['extensions'] = e.extensions): GraphQLError {
  return createGraphQLError(message, { nodes: e.nodes, source: e.source, positions: e.positions, path: e.path, extensions })
}

/** graphql-js' "Did you mean …?" suggestions removed: they reveal schema that introspection may hide. */
export const withoutSuggestions = (message: string) => message.replace(/ Did you mean .*\?$/, '')

/**
 * Expected failures are AppErrors (GraphQLErrors with a code) and pass through; syntax and
 * validation errors become `bad_request`; anything else is logged and answered as `internal`
 * (or `unavailable` when the database is unreachable), never with its message or stack.
 */
export function maskError(error: unknown): Error {
  if (isGraphQLError(error)) {
    const original = error.originalError
    if (!original || isGraphQLError(original)) {
      if (isErrorCode(error.extensions.code)) return error
      // graphql-js repeats a bad variable's value whole (`Variable "$x" got invalid value "…"`).
      return rebuildError(error, withoutLongEchoes(error.message), { ...error.extensions, code: 'bad_request' })
    }
    const app = toAppError(original)
    if (app.code === 'internal' || app.code === 'unavailable') logger.error({ err: original, path: logPath(error.path) }, 'resolver failed')
    return rebuildError(error, app.message, app.extensions)
  }
  const app = toAppError(error)
  logger.error({ err: error }, 'request failed')
  return app
}

/** A field's path as logged: aliases are the client's to choose, at any length. */
const logPath = (path: readonly (string | number)[] | undefined) => path?.map((p) => (typeof p === 'string' ? echoSafe(p) : p))

/**
 * Validation errors get the `bad_request` code like every other client mistake, without graphql-js'
 * "Did you mean …?" suggestions unless `suggestions` (config.graphql.suggestions: development
 * only, since they reveal schema fields that introspection may hide).
 */
export const useValidationErrorCodes = (suggestions: boolean): Plugin => ({
  onValidate:
    () =>
    ({ valid, result, setResult }) => {
      if (valid) return
      setResult(
        result.map((e) =>
          rebuildError(e, withoutLongEchoes(suggestions ? e.message : withoutSuggestions(e.message)), {
            ...e.extensions,
            code: 'bad_request',
            http: { status: 400, spec: true },
          }),
        ),
      )
    },
})
