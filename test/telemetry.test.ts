import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { emptyPostgres, testBackend } from './support/db.js'
import { embeddedDataDir, startGatewayProcess, type GatewayProcess } from './support/process.js'

// OpenTelemetry is opt-in (src/core/telemetry.ts): with OTEL_EXPORTER_OTLP_ENDPOINT set, a real
// gateway sends its spans over OTLP/HTTP (JSON here) to a local receiver; one request's trace,
// continued from the caller's traceparent, holds the HTTP, GraphQL, Prisma (and pg) spans, and its
// log line names the trace.

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
}

describe(`OpenTelemetry (${testBackend})`, () => {
  let receiver: Server
  let gw: GatewayProcess
  const spans: OtlpSpan[] = []
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = ''
      req.on('data', (d) => (body += d))
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          const doc = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }
          for (const r of doc.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans)
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const { port } = receiver.address() as AddressInfo
    const storage: Record<string, string> =
      testBackend === 'postgres' ? { DATABASE_URL: (await emptyPostgres()).url } : { DATA_DIR: await embeddedDataDir('vaultgate-otel-') }
    gw = await startGatewayProcess({
      ...storage,
      SEED_DEMO: 'false',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '200',
    })
  }, 120_000)
  afterAll(async () => {
    await gw?.stop()
    await new Promise<void>((resolve) => receiver.close(() => resolve()))
  })

  it("continues the caller's trace through HTTP, GraphQL and the database, and logs its id", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
    const parent = '00f067aa0ba902b7'
    const res = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${parent}-01` },
      body: JSON.stringify({ query: 'query TraceProbe { vaults(first: 1) { edges { node { id } } } }' }),
    })
    expect(res.status).toBe(200)
    await res.text()
    await vi.waitFor(() => expect(spans.filter((s) => s.traceId === traceId).some((s) => s.name.startsWith('prisma:'))).toBe(true), {
      timeout: 15_000,
      interval: 200,
    })
    await new Promise((r) => setTimeout(r, 500))
    const trace = spans.filter((s) => s.traceId === traceId)
    // The HTTP server span (kind 2 = SERVER) is the caller's span's child.
    const server = trace.find((s) => s.kind === 2)
    expect(server).toMatchObject({ parentSpanId: parent })
    const names = trace.map((s) => s.name)
    console.info(`[telemetry] ${trace.length} spans: ${names.join(', ')}`)
    expect(names.some((n) => /TraceProbe/.test(n))).toBe(true)
    expect(names.some((n) => n.startsWith('prisma:'))).toBe(true)
    if (testBackend === 'postgres') expect(names.some((n) => n.startsWith('pg.'))).toBe(true)
    // Probes are not traced.
    await (await fetch(`${gw.url}/healthz`)).text()
    // The request's log line carries the trace.
    const line = gw
      .stdout()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; route?: string; traceId?: string })
      .find((l) => l.msg === 'request' && l.route === '/graphql')
    expect(line?.traceId).toBe(traceId)
  }, 60_000)
})
