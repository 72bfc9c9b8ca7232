import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger, logger, setLogger } from '../../src/core/log.js'
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
    await insertVault('v1')
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
    const res = await t.request('/healthz', { headers: { 'x-request-id': 'probe-123', authorization: 'Bearer secret-token-value' } })
    expect(res.headers.get('x-request-id')).toBe('probe-123')
    const line = lines.find((l) => l.requestId === 'probe-123')
    expect(line).toMatchObject({ msg: 'request', method: 'GET', route: '/healthz', status: 200 })
    expect(JSON.stringify(lines)).not.toContain('secret-token-value')
  })
})
