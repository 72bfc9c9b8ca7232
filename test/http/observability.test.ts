import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger, logger, setLogger } from '../../src/core/log.js'
import { packageRoot } from '../../src/core/paths.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'

function metricValue(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`))
  return line ? Number(line.split(' ').pop()) : 0
}

describe(`metrics and request logs (${testBackend})`, () => {
  let t: TestApp
  const lines: Record<string, unknown>[] = []
  const previous = logger
  beforeAll(async () => {
    t = await createTestApp()
    await insertVault(t.db.prisma, 'v1')
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l))
        done()
      },
    })
    setLogger(createLogger('info', sink))
  })
  afterAll(async () => {
    setLogger(previous)
    await t.close()
  })

  const scrape = async () => await (await t.request('/metrics')).text()

  it('counts requests by route pattern and status, and operations by name', async () => {
    const before = await scrape()
    await t.graphql('query VaultProbe { vault(id: "v1") { id } }')
    await t.graphql('query VaultProbe { vault(id: "v1") { id } }')
    await t.request('/v1/nope/123')
    const after = await scrape()
    const delta = (name: string, labels: string) => metricValue(after, name, labels) - metricValue(before, name, labels)
    expect(delta('vaultgate_http_requests_total', 'route="/graphql",method="POST",status="200"')).toBe(2)
    expect(delta('vaultgate_graphql_operations_total', 'operation="VaultProbe",type="query"')).toBe(2)
    expect(delta('vaultgate_errors_total', 'code="not_found"')).toBe(1)
    expect(after).toMatch(/^vaultgate_db_pool_waiting \d+$/m)
    expect(after).toMatch(/^vaultgate_sql_statement_duration_seconds_count\{outcome="ok"\} \d+$/m)
  })

  it('counts REST revalidations as cache hits and misses, and exposes the pool in use', async () => {
    const before = await scrape()
    const etag = (await t.request('/v1/vaults/v1')).headers.get('etag')!
    expect((await t.request('/v1/vaults/v1', { headers: { 'if-none-match': etag } })).status).toBe(304)
    expect((await t.request('/v1/vaults/v1', { headers: { 'if-none-match': etag } })).status).toBe(304)
    expect((await t.request('/v1/vaults/v1', { headers: { 'if-none-match': 'W/"stale"' } })).status).toBe(200)
    const after = await scrape()
    const delta = (labels: string) => metricValue(after, 'vaultgate_cache_lookups_total', labels) - metricValue(before, 'vaultgate_cache_lookups_total', labels)
    expect(delta('cache="rest_etag",result="hit"')).toBe(2)
    expect(delta('cache="rest_etag",result="miss"')).toBe(1)
    expect(after).toMatch(/^vaultgate_db_pool_in_use \d+$/m)
  })

  it('logs one line per request with its id, and no headers', async () => {
    lines.length = 0
    const res = await t.request('/v1/vaults/v1', { headers: { 'x-request-id': 'probe-123', authorization: 'Bearer secret-token-value' } })
    expect(res.headers.get('x-request-id')).toBe('probe-123')
    const line = lines.find((l) => l.requestId === 'probe-123')
    expect(line).toMatchObject({ level: 'info', msg: 'request', method: 'GET', route: '/v1/vaults/:vault_id', status: 200 })
    expect(JSON.stringify(lines)).not.toContain('secret-token-value')
    // Probes are below info (test/logs.test.ts shows them at debug).
    await t.request('/healthz', { headers: { 'x-request-id': 'probe-456' } })
    expect(lines.find((l) => l.requestId === 'probe-456')).toBeUndefined()
  })

  it("exposes Node's process metrics under their standard names, and the build", async () => {
    const text = await scrape()
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_eventloop_lag_p99_seconds']) {
      expect(text).toMatch(new RegExp(`^${name} [0-9.e+-]+$`, 'm'))
    }
    expect(text).not.toContain('vaultgate_process_')
    expect(text).not.toContain('vaultgate_nodejs_')
    const { version } = JSON.parse(await readFile(path.join(packageRoot, 'package.json'), 'utf8'))
    expect(text).toContain(`vaultgate_build_info{version="${version}",node="${process.versions.node}"} 1\n`)
  })

  it('has latency buckets up to the request deadline (REQUEST_TIMEOUT_MS), not beyond', async () => {
    await t.request('/v1/vaults/v1')
    const bounds = (text: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith('vaultgate_http_request_duration_seconds_bucket{') && l.includes('route="/v1/vaults/:vault_id"'))
        .map((l) => /le="([^"]+)"/.exec(l)![1])
    expect(bounds(await scrape()).slice(-4)).toEqual(['5', '10', '15', '+Inf'])
    const other = await createTestApp({ REQUEST_TIMEOUT_MS: '45000' })
    try {
      await other.request('/v1/vaults/v1')
      expect(bounds(await (await other.request('/metrics')).text()).slice(-4)).toEqual(['10', '30', '45', '+Inf'])
    } finally {
      await other.app.close()
    }
  })
})

describe(`METRICS_TOKEN (${testBackend})`, () => {
  const TOKEN = 'metrics-token-for-scrapers-0123456789abcdef'
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ METRICS_TOKEN: TOKEN })
  })
  afterAll(() => t.close())

  it('answers /metrics only to the bearer of the token; 401 with WWW-Authenticate otherwise', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer wrong' },
      { authorization: `Basic ${TOKEN}` },
      { authorization: `Bearer ${TOKEN}x` },
    ]) {
      const res = await t.request('/metrics', { headers })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer')
      expect(await res.json()).toEqual({
        status: 'error',
        error: { code: 'unauthorized', message: 'A valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>).' },
        server_time_ms: expect.any(Number),
      })
    }
    const res = await t.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(res.status).toBe(200)
    expect(await res.text()).toMatch(/^vaultgate_http_requests_total\{/m)
  })
})
