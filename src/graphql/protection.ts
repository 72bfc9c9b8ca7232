import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases'
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth'
import { maxDirectivesPlugin } from '@escape.tech/graphql-armor-max-directives'
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens'
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention'
import { getOperationAST, type ASTVisitor, type FieldNode, type GraphQLError, type ValidationContext } from 'graphql'
import { createGraphQLError, type Plugin } from 'graphql-yoga'
import type { Config } from '../config.js'
import type { Context } from './context.js'
import { AppError } from '../core/errors.js'
import { operationCost, overCost } from './cost.js'
import { rebuildError, withoutSuggestions } from './errors.js'

/** Header a GET (or form-encoded) GraphQL request must carry, so a cross-site page cannot send one blind. */
export const CSRF_HEADERS = ['x-graphql-csrf', 'x-graphql-yoga-csrf', 'apollo-require-preflight']

// Limit violations become ordinary validation errors (reported, not thrown), so they reach
// useValidationErrorCodes and answer `bad_request` with status 400 like any other invalid query.
// graphql-armor words them "Syntax Error: …", but the syntax is fine: the prefix goes.
const report = {
  propagateOnRejection: false,
  onReject: [(ctx: ValidationContext | null, error: GraphQLError) => ctx?.reportError(createGraphQLError(error.message.replace(/^Syntax Error: /, '')))],
}

/**
 * Static limits on what one GraphQL document may ask for (graphql-armor), checked after parsing
 * and before anything runs: depth, aliases, a cost estimate, tokens and directives. Introspection
 * is refused when turned off (production default), and simple cross-site requests are refused
 * (CSRF prevention). Introspection queries are exempt from depth and cost, so GraphiQL's own
 * schema query works wherever introspection is on.
 */
export function protectionPlugins(config: Pick<Config, 'graphql'>, { knownDocument }: { knownDocument?: (url: URL) => boolean } = {}): Plugin[] {
  const g = config.graphql
  const plugins: Plugin[] = [
    csrfPrevention(knownDocument),
    maxTokensPlugin({ n: g.maxTokens }) as Plugin,
    maxDepthPlugin({ n: g.maxDepth, ignoreIntrospection: true, flattenFragments: true, ...report }) as Plugin,
    maxAliasesPlugin({ n: g.maxAliases, ...report }) as Plugin,
    costLimit(g.maxCost),
    maxDirectivesPlugin({ n: g.maxDirectives, ...report }) as Plugin,
    useRequestDeadline(),
  ]
  if (!g.suggestions) plugins.push(useNoSuggestions())
  if (!g.introspection) plugins.push({ onValidate: ({ addValidationRule }) => addValidationRule(noIntrospection) })
  return plugins
}

/**
 * The cost limit (src/graphql/cost.ts), with the request's variables. Checked when the operation is
 * about to run, not as a validation rule: Yoga caches validation per document text, whatever its
 * variables. The REST shim's documents go through it too (their variables are the route's parameters).
 */
function costLimit(max: number): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const found = operationCost(args.schema, args.document, (args.variableValues ?? {}) as Record<string, unknown>, args.operationName)
      if (found > max) {
        setResultAndStopExecution({ errors: [overCost(max, found)] })
        return
      }
      // Decisions §15: an answer says what it cost against the limit, so a client sees how close
      // it runs before it is refused (the REST shim's shapes carry only data: left out there).
      if ((args.contextValue as { rest?: boolean }).rest) return
      return {
        onExecuteDone({ result, setResult }) {
          if (Symbol.asyncIterator in result || result.data == null) return
          setResult({ ...result, extensions: { ...result.extensions, cost: { requested: found, limit: max } } })
        },
      }
    },
    // Subscriptions do not go through onExecute: each of their events costs what the document asks for.
    onSubscribe({ args, setResultAndStopExecution }) {
      const found = operationCost(args.schema, args.document, (args.variableValues ?? {}) as Record<string, unknown>, args.operationName)
      if (found > max) setResultAndStopExecution({ errors: [overCost(max, found)] })
    },
  }
}

/**
 * Refuses `__schema` and `__type` (`__typename` stays: clients need it). Written out rather than
 * graphql-js' NoSchemaIntrospectionCustomRule, which type-checks with `instanceof` and breaks
 * when a process holds two copies of graphql (its CommonJS and ESM builds).
 */
const noIntrospection = (context: ValidationContext): ASTVisitor => ({
  Field(node: FieldNode) {
    if (node.name.value === '__schema' || node.name.value === '__type') {
      context.reportError(createGraphQLError(`GraphQL introspection is disabled on this server; the query asks for "${node.name.value}".`, { nodes: [node] }))
    }
  },
})

/**
 * The answer to a WebSocket upgrade that is not graphql-transport-ws on /graphql (the one the
 * gateway takes: src/http/pipeline/websocket.ts); src/server.ts lets the others through as requests.
 */
export const WEBSOCKET_REFUSAL =
  'WebSocket on /graphql speaks the graphql-transport-ws subprotocol (Sec-WebSocket-Protocol: graphql-transport-ws), for subscriptions; or use Server-Sent Events (Accept: text/event-stream).'

/**
 * Yoga's CSRF prevention: a request without a preflight-forcing Content-Type (a GET, a form post,
 * text/plain) must carry one of CSRF_HEADERS, but for a GET of a known trusted document. Refusals answer like every other client mistake,
 * `bad_request` 400, with a sentence saying what to send.
 */
function csrfPrevention(knownDocument?: (url: URL) => boolean): Plugin {
  const check = useCSRFPrevention({ requestHeaders: CSRF_HEADERS }).onRequestParse!
  return {
    onRequestParse(payload) {
      // A WebSocket client of another subprotocol (subscriptions-transport-ws, say) arrives as a GET
      // without the CSRF header: the CSRF sentence would send it looking for a header, when what it
      // needs is the subprotocol served.
      if (payload.request.headers.get('upgrade')?.toLowerCase() === 'websocket') throw new AppError('bad_request', WEBSOCKET_REFUSAL)
      // A GET naming a trusted document (decisions §15) runs only what the operator deployed, and a
      // mutation is refused on GET anyway: an EventSource, which cannot set headers, may open one.
      if (payload.request.method === 'GET' && knownDocument?.(payload.url)) return
      try {
        return check(payload)
      } catch {
        throw new AppError(
          'bad_request',
          'A GET or form-encoded GraphQL request must carry the X-GraphQL-CSRF header (any value); or POST with Content-Type: application/json.',
        )
      }
    },
  }
}

/**
 * Queries run under the request's deadline signal (see requestDeadline): past it, the executor
 * answers `unavailable` and starts no further resolver. Mutations run to the end so that a write
 * is never left half-answered (its statements are bounded by DB_STATEMENT_TIMEOUT_MS instead).
 */
export function useRequestDeadline(): Plugin {
  return {
    onExecute({ args }) {
      const op = getOperationAST(args.document, args.operationName)
      if (op?.operation !== 'query') return
      const signal = (args.contextValue as Partial<Context>).signal
      // @ts-expect-error the executor (graphql-tools) reads `signal`; envelop's typing lacks it
      if (signal) args.signal = signal
    },
  }
}

/**
 * No "Did you mean …?" in variable errors either (useValidationErrorCodes strips them from
 * validation errors): suggestions reveal schema that introspection may hide.
 */
export function useNoSuggestions(): Plugin {
  const strip = (e: GraphQLError) => {
    const message = withoutSuggestions(e.message)
    return message === e.message ? e : rebuildError(e, message)
  }
  return {
    onExecute: () => ({
      onExecuteDone({ result, setResult }) {
        if ('errors' in result && result.errors?.length) setResult({ ...result, errors: result.errors.map(strip) })
      },
    }),
  }
}
