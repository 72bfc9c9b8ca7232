import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Config } from './config.js'
import { systemClock, type Clock } from './core/clock.js'
import type { Database } from './db/client.js'
import type { ExampleIds } from './graphql/examples.js'
import { operationClassifier } from './graphql/public-operations.js'
import { servedSchema } from './graphql/schema/index.js'
import { graphqlStep } from './http/pipeline/graphql.js'
import { admitted, createPipeline } from './http/pipeline/index.js'
import { longTailStep } from './http/pipeline/long-tail.js'
import { longTailRoutes } from './http/routes/index.js'
import { eventStreams } from './http/pipeline/streams.js'
import { VERIFY_PATH, verifyStep } from './http/pipeline/verify.js'
import { graphqlWebSockets } from './http/pipeline/websocket.js'
import { restRoutes } from './rest/routes/index.js'
import { restStep } from './rest/step.js'
import { createServices, type Services } from './services.js'
import type { SourcesConfig } from './sources/config.js'

// The composition root (docs/adr/0005-one-pipeline.md): the services of one gateway process, the
// one request pipeline in front of them, and the long tail of routes it hands to Hono.

export type App = Omit<Services, 'close' | 'dataChanged' | 'live'> & {
  config: Config
  /** A Web Request through the pipeline (tests, embedders; `env`: @hono/node-server's bindings, if any). */
  fetch: (request: Request, env?: unknown) => Promise<Response>
  /** The same pipeline for node:http (src/server.ts). */
  listener: (req: IncomingMessage, res: ServerResponse) => void
  /** node:http's 'upgrade' event (src/server.ts): graphql-transport-ws on /graphql (src/http/pipeline/websocket.ts). */
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void
  /**
   * GraphQL subscriptions over SSE and WebSocket (docs/push.md): subscriptions open (both
   * transports), WebSockets open, hub listeners, and the end of them all (shutdown).
   */
  subscriptions: {
    readonly open: number
    readonly sockets: number
    readonly listeners: number
    close(): void
    /** Cuts the WebSockets whose peers have not answered the close (past SHUTDOWN_TIMEOUT_MS). */
    terminate(): void
  }
  /** Every route the app serves (method and path), for the documentation checks. */
  routes: { method: string; path: string }[]
  /** From now on /readyz answers 503 (the process is shutting down; load balancers take it out). */
  drain(): void
  /** Stops background work (not the database: its owner closes it). */
  close(): Promise<void>
}

/**
 * `clock`: injectable time (tests) for each request's `now`, key expiry, key-cache age and session tokens.
 * `examples`: ids for GraphiQL's example operations (the demo data's, when it is loaded; may arrive after start).
 * `chainSources`: the parsed VAULT_SOURCES_FILE (src/server.ts reads it before the database is opened).
 */
export function createApp({
  config,
  db,
  clock = systemClock,
  examples,
  chainSources,
}: {
  config: Config
  db: Database
  clock?: Clock
  examples?: ExampleIds | Promise<ExampleIds | undefined>
  chainSources?: SourcesConfig
}): App {
  const services = createServices({ config, db, clock, examples, chainSources })
  const { limits, verifier, yoga, responseCache: cache, freshness, webhooks, documents } = services
  const streams = eventStreams(config.subscriptions)
  // Its refusals are answers of the pipeline (made below): `refuse` is bound once it exists.
  const websockets = graphqlWebSockets({ config, yoga, streams, limits, refuse: (req, socket, error) => pipeline.refuse(req, socket, error) })
  const classOf = operationClassifier(servedSchema(config.graphql))
  // The REST shim's fixed documents are trusted documents of their own (decisions §15).
  documents.trust(restRoutes.map((r) => r.document))

  let draining = false
  const tail = longTailRoutes({
    config,
    db,
    clock,
    limits,
    webhooks,
    onDataChanged: services.dataChanged,
    replicas: services.replicas.status,
    draining: () => draining,
  })

  // The pipeline's routes, in order: the first that matches answers.
  const graphql = graphqlStep({ config, yoga, cache, classOf, documents, freshness, streams, admitted })
  const rest = restStep({ yoga, routes: restRoutes, cache, freshness, who: config, admitted })
  const verify = verifyStep({ config, verifier, limits })
  const longTail = longTailStep(tail)
  const { pipeline } = createPipeline({
    config,
    limits,
    cache,
    routes: [
      (x) => (x.path === '/graphql' && (x.method === 'GET' || x.method === 'POST') ? graphql(x) : undefined),
      (x) => (x.path.startsWith('/v1/') ? rest.answer(x) : undefined),
      (x) => (x.path === VERIFY_PATH && x.method === 'POST' ? verify(x) : undefined),
      longTail,
    ],
    draining: () => draining,
  })

  const { close: closeServices, dataChanged: _dataChanged, live, ...exposed } = services
  return {
    ...exposed,
    config,
    fetch: pipeline.fetch,
    listener: pipeline.listener,
    upgrade: websockets.upgrade,
    subscriptions: {
      get open() {
        return streams.open
      },
      get sockets() {
        return websockets.sockets
      },
      get listeners() {
        return live.listeners
      },
      // SSE streams end with `event: complete`, WebSockets close with 1001 (going away).
      close: () => {
        streams.close()
        websockets.close()
      },
      terminate: () => websockets.terminate(),
    },
    routes: [
      { method: 'GET', path: '/graphql' },
      { method: 'POST', path: '/graphql' },
      ...rest.routes,
      { method: 'POST', path: VERIFY_PATH },
      ...tail.routes.filter((r) => r.method !== 'ALL').map(({ method, path }) => ({ method, path })),
    ],
    drain: () => {
      draining = true
    },
    close: async () => {
      streams.close()
      websockets.terminate()
      await closeServices()
    },
  }
}
