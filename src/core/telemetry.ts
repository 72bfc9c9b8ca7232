import { register } from 'node:module'

// OpenTelemetry, opt-in: nothing of it is loaded unless OTEL_EXPORTER_OTLP_ENDPOINT is set (the
// entry points call startTelemetry() before anything else is imported, so the instrumentations see
// `http`, `pg` and Prisma load). Spans: the HTTP server (`traceparent` honoured: W3C trace
// context), pg statements, Prisma operations, and GraphQL parse/validate/execute
// (@envelop/opentelemetry, src/graphql/yoga.ts). Exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_*
// variables, as the exporter reads them); log lines carry the active trace and span ids.

export interface Telemetry {
  /** The Envelop plugin tracing GraphQL operations (src/graphql/yoga.ts adds it). */
  graphqlPlugin: object
  shutdown(): Promise<void>
}

let started: Telemetry | undefined

/** The running telemetry, when OTEL_EXPORTER_OTLP_ENDPOINT started it. */
export const telemetry = () => started

let traceApi: typeof import('@opentelemetry/api') | undefined

export async function startTelemetry(env: NodeJS.ProcessEnv = process.env): Promise<Telemetry | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT || started) return started
  // ESM imports of `http` and `pg` are instrumented through import-in-the-middle's loader hook,
  // for those modules only: it re-exports what it wraps by value, so a module's `export let`
  // would no longer follow its assignments.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, { data: { include: ['http', 'https', 'pg'] } })
  const [
    api,
    { AsyncLocalStorageContextManager },
    core,
    { TracerProvider, BatchSpanProcessor },
    { resourceFromAttributes },
    { OTLPTraceExporter },
    instrumentation,
    http,
    pgi,
    prismai,
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('@prisma/instrumentation'),
  ])
  const { useOpenTelemetry } = await import('@envelop/opentelemetry')
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? 'vaultgate' }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: Number(env.OTEL_BSP_SCHEDULE_DELAY ?? 5000) })],
  })
  traceApi = api
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator())
  api.trace.setGlobalTracerProvider(provider)
  instrumentation.registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      // Probes are not traced: they would be most of the spans.
      new http.HttpInstrumentation({ ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)(\?|$)/.test(req.url ?? '') }),
      new pgi.PgInstrumentation(),
      new prismai.PrismaInstrumentation(),
    ],
  })
  // Variables and results can hold wallet addresses and amounts: not recorded. No span per resolver.
  const graphqlPlugin = useOpenTelemetry({ resolvers: false, variables: false, result: false, document: true }, provider as never, api.SpanKind.INTERNAL)
  started = { graphqlPlugin, shutdown: () => provider.shutdown() }
  return started
}

/** The active span's ids for a log line (pino's mixin, src/core/log.ts); nothing without telemetry. */
export function traceFields(): Record<string, string> {
  if (!started) return {}
  const span = traceApi?.trace.getActiveSpan()
  if (!span) return {}
  const { traceId, spanId } = span.spanContext()
  return { traceId, spanId }
}
