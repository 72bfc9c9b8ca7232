import { useDeferStream } from '@graphql-yoga/plugin-defer-stream'
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga'
import { guardKeyManagement } from '../auth/key-guard.js'
import { createSessionAuth } from '../auth/session.js'
import { resolveViewer } from '../auth/viewer.js'
import type { Config } from '../config.js'
import type { Clock } from '../core/clock.js'
import type { Db } from '../db/client.js'
import { telemetry } from '../core/telemetry.js'
import type { RateLimits } from '../core/rate-limit.js'
import type { Freshness } from '../freshness/status.js'
import { createContext, type Context, type RequestScope } from './context.js'
import { type DocumentStore, usePersistedDocuments } from './documents.js'
import { maskError, useValidationErrorCodes } from './errors.js'
import { graphiqlOptions, type ExampleIds } from './examples.js'
import { renderGraphiQLShell } from './graphiql-page.js'
import { useOperationMetrics } from './observability.js'
import { protectionPlugins } from './protection.js'
import { useGraphqlResponseRules } from './response-rules.js'
import { servedSchema } from './schema/index.js'
import { operationClassifier, type OperationClass } from './public-operations.js'
import { useEventStreamHeartbeat } from './sse.js'
import { useSharedSubscriptions } from './shared-subscriptions.js'
import type { LiveHub } from '../live/hub.js'

export type Yoga = YogaServerInstance<RequestScope, Context>

/**
 * The GraphQL server of /graphql and of the REST shim: the schema, the one context factory, error
 * masking, metrics and the limits of src/graphql/protection.ts. The HTTP layer passes each
 * request's id and deadline as Yoga's server context (`yoga.fetch(request, scope)`).
 */
export function createGatewayYoga({
  config,
  db,
  reads,
  clock,
  limits,
  examples,
  live,
  freshness,
  documents,
}: {
  config: Config
  /** The trusted documents and APQ registrations (src/graphql/documents.ts); none when absent. */
  documents?: DocumentStore
  /** The primary's client: writes, key management, wallet sessions. */
  db: Db
  /** The client for one public or wallet read (src/db/replicas.ts `reader`); absent: `db`. */
  reads?: () => Db
  /** How old the data is (decisions §10): GraphQL `meta`, and the `asOf` of wallet answers. */
  freshness?: Freshness
  clock: Clock
  limits: RateLimits
  /** The subscriptions' fan-out (src/live/hub.ts); without it a subscription is refused. */
  live?: LiveHub
  /** Ids for GraphiQL's example operations (the demo data's, when it is loaded; may arrive after start). */
  examples?: ExampleIds | Promise<ExampleIds | undefined>
}): Yoga {
  const session = createSessionAuth(config.auth, clock)
  const schema = servedSchema(config.graphql)
  const classOf = operationClassifier(schema)
  return createYoga<RequestScope, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    context: ({ request, requestId, deadline, data, client, params }) =>
      guardKeyManagement(
        createContext({
          db,
          reads: reads && readsMayUseReplica(classOf(params?.query ?? '', params?.operationName ?? undefined)) ? reads : undefined,
          request,
          requestId,
          deadline,
          now: clock(),
          clock,
          // A scope without a client (no socket: in-process callers) counts as `unknown`, as clientIdOf does.
          authenticate: (r, who) => resolveViewer(db, r, session, { limits, client: who ?? 'unknown' }),
          settings: { spikePct: config.spikePct },
          live,
          data,
          freshness,
          client,
        }),
        {
          limits,
          config,
        },
      ),
    maskedErrors: { maskError },
    graphiql: config.graphql.graphiql ? async () => graphiqlOptions(await examples) : false,
    // The bundled GraphiQL (the default one loads its scripts from a CDN, which offline machines
    // lack), as a small page that loads the bundle from this gateway (src/graphql/graphiql-page.ts).
    renderGraphiQL: renderGraphiQLShell,
    landingPage: false,
    logging: false,
    // CORS is answered by Hono (src/http/headers.ts): Yoga's default would reflect any origin.
    cors: false,
    plugins: [
      // Turns a documentId or APQ hash into its document before Yoga checks the params; trusted-only's gate.
      ...(documents ? [usePersistedDocuments(documents)] : []),
      // Incremental delivery (decisions §15): @defer and @stream, answered as multipart/mixed or
      // SSE; the cost and depth limits below see the whole operation, deferred parts included.
      useDeferStream(),
      useValidationErrorCodes(config.graphql.suggestions),
      useOperationMetrics(),
      ...protectionPlugins(config, { knownDocument: documents && ((url) => documents.knowsGet(url)) }),
      useGraphqlResponseRules({ maxResponseBytes: config.graphql.maxResponseBytes }),
      // Subscriptions over SSE (docs/push.md), with the configured heartbeat.
      useEventStreamHeartbeat(config.subscriptions.heartbeatMs),
      // OpenTelemetry's GraphQL spans, when OTEL_EXPORTER_OTLP_ENDPOINT is set (src/core/telemetry.ts).
      ...(telemetry() ? [telemetry()!.graphqlPlugin as Plugin] : []),
      // Last: one execution per change for subscribers of the same operation and variables
      // (decisions §16), after every plugin that may refuse a subscription.
      useSharedSubscriptions(),
    ],
  })
}

/**
 * Which operations may read from a replica (docs/operations.md "Read replicas"): queries and
 * subscriptions of public and wallet data. Key management reads and writes its keys on the primary
 * (a key just created must be seen at once), and so does anything not known to be a read (a
 * mutation, a document that does not parse).
 */
export function readsMayUseReplica(kind: OperationClass): boolean {
  return (kind.read || kind.subscription === true) && !kind.keyManagement
}
