import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'

// The pages' HTTP side (what Chromium does with them: test/http/browser.test.ts).
describe(`explorer and reference pages (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
  })
  afterAll(() => t.close())

  it('serves the explorer at / to browsers, under a policy that allows this origin only', async () => {
    const res = await t.request('/', { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('content-security-policy')).toBe(
      "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    )
    // Accept: HTML or the JSON links; Accept-Encoding: the page is over COMPRESS_MIN_BYTES (src/http/compression.ts).
    expect(res.headers.get('vary')).toBe('Accept, Accept-Encoding')
    const html = await res.text()
    const assets = [...html.matchAll(/<(?:script|link)[^>]* (?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    expect(assets).toEqual(['data:,', '/explorer/explorer.css', '/explorer/chart.umd.min.js', '/explorer/explorer.js', '/explorer/live.js'])
    const types = await Promise.all(assets.slice(1).map(async (a) => (await t.request(a)).headers.get('content-type')))
    expect(types).toEqual(['text/css; charset=utf-8', 'text/javascript; charset=utf-8', 'text/javascript; charset=utf-8', 'text/javascript; charset=utf-8'])
  })

  it('serves every module the explorer imports, and nothing it does not', async () => {
    // The entry module's imports, and theirs: each one is served (a missing one breaks the page).
    const seen = new Set<string>()
    const pending = ['explorer.js', 'live.js']
    while (pending.length) {
      const file = pending.pop()!
      if (seen.has(file)) continue
      seen.add(file)
      const res = await t.request(`/explorer/${file}`)
      expect(res.status, file).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
      for (const m of (await res.text()).matchAll(/^import [^']*'\.\/([\w-]+\.js)'/gm)) pending.push(m[1]!)
    }
    expect([...seen].sort()).toEqual(['explorer.js', 'freshness.js', 'lib.js', 'live.js', 'performance.js', 'wallet.js'])
  })

  it('answers / with the list of surfaces to other clients', async () => {
    const res = await t.request('/')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      name: 'vaultgate',
      links: { explorer: '/', graphql: '/graphql', rest: '/v1/vaults', docs: '/docs', openapi: '/openapi.json', metrics: '/metrics', health: '/healthz' },
    })
  })

  it('revalidates assets by ETag', async () => {
    const first = await t.request('/explorer/chart.umd.min.js')
    expect(first.headers.get('cache-control')).toBe('public, max-age=3600')
    const again = await t.request('/explorer/chart.umd.min.js', { headers: { 'if-none-match': first.headers.get('etag')! } })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe('')
  })

  it('leaves other paths alone', async () => {
    expect((await t.request('/healthz')).status).toBe(200)
    const missing = await t.request('/explorer/nope.js')
    expect(missing.status).toBe(404)
    expect((await missing.json()).error.code).toBe('not_found')
  })
})
