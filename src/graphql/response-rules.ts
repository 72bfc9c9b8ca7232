import type { ExecutionResult, GraphQLError } from 'graphql'
import { createGraphQLError, type Plugin } from 'graphql-yoga'

// What /graphql answers over HTTP (GraphQL-over-HTTP), for GraphQL clients only: the REST shim runs
// the same documents and keeps its own statuses (it passes `rest: true` in Yoga's server context).
// - An answer whose `data` is not null is 200, whatever errors its fields had: clients such as
//   Apollo drop a non-2xx answer, and with it the good part of a dashboard's query. The errors keep
//   their codes and headers; only their HTTP status goes.
// - Request errors (parse, validation, limits: no `data` at all) are 400 when the client accepts
//   application/graphql-response+json and 200 when it asks for application/json, as the spec says
//   (`http.spec` tells Yoga's result processor so).
// - One answer is at most GRAPHQL_MAX_RESPONSE_BYTES once serialised: past that, a request error
//   instead. The text is serialised once here and reused for the answer.

/** The request error of an answer larger than `max` bytes. */
export const tooLarge = (max: number) =>
  createGraphQLError(`The answer would be larger than ${max} bytes (GRAPHQL_MAX_RESPONSE_BYTES); ask for fewer fields, fewer aliases or smaller pages.`, {
    extensions: { code: 'bad_request', http: { status: 400, spec: true } },
  })

type HttpExtension = { status?: number; headers?: Record<string, string>; spec?: boolean }

/** The error without its HTTP status (headers such as WWW-Authenticate or Retry-After stay). */
function withoutStatus(error: GraphQLError): GraphQLError {
  const http = error.extensions?.http as HttpExtension | undefined
  if (!http?.status) return error
  const { status: _status, ...rest } = http
  return createGraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, http: rest },
  })
}

/** An error as Yoga serialises it (graphql-yoga's omitInternalsFromResultErrors): without `http` and `unexpected`. */
function onTheWire(error: GraphQLError) {
  const json = error.toJSON()
  const { http: _http, unexpected: _unexpected, ...extensions } = (json.extensions ?? {}) as Record<string, unknown>
  return { ...json, extensions: Object.keys(extensions).length > 0 ? extensions : undefined }
}

export function useGraphqlResponseRules({ maxResponseBytes }: { maxResponseBytes: number }): Plugin {
  return {
    onExecutionResult({ result, setResult, context }) {
      if (!result || Symbol.asyncIterator in result || Array.isArray(result)) return
      if ((context as { rest?: boolean }).rest) return
      let r = result as ExecutionResult & { stringify?: (r: ExecutionResult) => string }
      if (r.errors?.length && r.data != null) r = { ...r, errors: r.errors.map(withoutStatus) }
      // Answers with errors are measured too (one bad-argument field must not let the rest of a huge
      // query past the cap), as Yoga writes them: without the internal extensions.
      const text = JSON.stringify(r.errors?.length ? { ...r, errors: r.errors.map(onTheWire) } : r)
      // UTF-16 length bounds the UTF-8 length from below; count bytes only when it could matter.
      if (text.length * 3 > maxResponseBytes && Buffer.byteLength(text) > maxResponseBytes) {
        setResult({ errors: [tooLarge(maxResponseBytes)] })
        return
      }
      setResult({ ...r, stringify: () => text })
    },
  }
}
