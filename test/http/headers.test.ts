import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HTML_CSP } from '../../src/http/headers.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'

const ADMIN_TOKEN = 'admin-token-0123456789-0123456789-abcdef'
const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

describe(`security headers (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ ADMIN_TOKEN })
    await insertVault(t.db.prisma, 'v1')
  })
  afterAll(() => t.close())

  // One request per kind of answer: success, client error, not found, admin, health, GraphQL, HTML.
  const requests: [string, string, RequestInit?][] = [
    ['health', '/healthz'],
    ['readiness', '/readyz'],
    ['metrics', '/metrics'],
    ['REST read', '/v1/vaults/v1'],
    ['REST 304', '/v1/vaults/v1', { headers: { 'if-none-match': '*' } }],
    ['REST 400', '/v1/vaults?limit=0'],
    ['REST 404', '/v1/vaults/none'],
    ['unknown route', '/nothing/here'],
    ['GraphQL', '/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' }],
    ['GraphQL error', '/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ nope }"}' }],
    ['admin 401', '/admin/import', { method: 'POST', body: '{}' }],
    ['admin 200', '/admin/import', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: '{}' }],
  ]

  it.each(requests)('%s: nosniff, no framing, no referrer, a CSP that allows nothing', async (_name, path, init) => {
    const res = await t.request(path, init)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    expect(res.headers.get('content-security-policy')).toBe(API_CSP)
    expect(res.headers.get('strict-transport-security')).toBe('max-age=15552000; includeSubDomains')
    expect(res.headers.get('x-powered-by')).toBeNull()
  })

  it('gives the GraphiQL page a CSP that lets its inline scripts and workers run, and nothing else in', async () => {
    const res = await t.request('/graphql', { headers: { accept: 'text/html' } })
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    expect(res.headers.get('content-security-policy')).toBe(HTML_CSP)
    expect(HTML_CSP).toContain("frame-ancestors 'none'")
    expect(HTML_CSP).toContain("connect-src 'self'")
    expect(res.headers.get('x-frame-options')).toBe('DENY')
  })
})

describe(`CORS (${testBackend})`, () => {
  const preflight = (t: TestApp, path: string, origin: string, method = 'POST') =>
    t.request(path, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'content-type,authorization' },
    })

  describe('by default', () => {
    let t: TestApp
    beforeAll(async () => {
      t = await createTestApp({ ADMIN_TOKEN })
      await insertVault(t.db.prisma, 'v1')
    })
    afterAll(() => t.close())

    it('lets any origin read public data, without credentials', async () => {
      const res = await t.request('/v1/vaults/v1', { headers: { origin: 'https://anywhere.example' } })
      expect(res.status).toBe(200)
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      expect(res.headers.get('access-control-allow-credentials')).toBeNull()
      expect(res.headers.get('access-control-expose-headers')).toBe('ETag,Retry-After,X-Request-Id,RateLimit-Policy,RateLimit,Data-As-Of')
      const pre = await preflight(t, '/graphql', 'https://anywhere.example')
      expect(pre.status).toBe(204)
      expect(pre.headers.get('access-control-allow-origin')).toBe('*')
      expect(pre.headers.get('access-control-allow-methods')).toBe('GET,POST,DELETE,OPTIONS')
    })

    it('answers no preflight for key management, admin or internal routes', async () => {
      for (const path of ['/v1/apiKey', '/admin/import', '/internal/v1/apiKey/verify']) {
        const res = await preflight(t, path, 'https://anywhere.example')
        expect(res.headers.get('access-control-allow-origin')).toBeNull()
        expect(res.headers.get('access-control-allow-methods')).toBeNull()
        expect(res.status).not.toBe(204)
      }
      const admin = await t.request('/admin/import', {
        method: 'POST',
        headers: { origin: 'https://anywhere.example', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: '{}',
      })
      expect(admin.headers.get('access-control-allow-origin')).toBeNull()
    })
  })

  describe('configured', () => {
    let t: TestApp
    beforeAll(async () => {
      t = await createTestApp({ CORS_ORIGINS: 'https://dash.example,https://other.example', CORS_KEY_ORIGINS: 'https://dash.example' })
      await insertVault(t.db.prisma, 'v1')
    })
    afterAll(() => t.close())

    it('allows listed origins only, varying by Origin', async () => {
      const ok = await t.request('/v1/vaults/v1', { headers: { origin: 'https://other.example' } })
      expect(ok.headers.get('access-control-allow-origin')).toBe('https://other.example')
      expect(ok.headers.get('vary')).toContain('Origin')
      const other = await t.request('/v1/vaults/v1', { headers: { origin: 'https://evil.example' } })
      expect(other.status).toBe(200)
      expect(other.headers.get('access-control-allow-origin')).toBeNull()
    })

    it('opens key management to CORS_KEY_ORIGINS only', async () => {
      const dash = await preflight(t, '/v1/apiKey', 'https://dash.example')
      expect(dash.status).toBe(204)
      expect(dash.headers.get('access-control-allow-origin')).toBe('https://dash.example')
      const other = await preflight(t, '/v1/apiKey', 'https://other.example')
      expect(other.headers.get('access-control-allow-origin')).toBeNull()
    })

    it('lets a browser send X-Service-Wallet (tokens holding several wallets), varying by Origin once', async () => {
      const res = await t.request('/v1/apiKey', {
        method: 'OPTIONS',
        headers: {
          origin: 'https://dash.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,x-service-wallet',
        },
      })
      expect(res.status).toBe(204)
      expect(Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'))).toEqual({
        'access-control-allow-origin': 'https://dash.example',
        'access-control-allow-methods': 'GET,POST,DELETE,OPTIONS',
        'access-control-allow-headers': 'Content-Type,Authorization,X-Request-Id,If-None-Match,X-GraphQL-CSRF,X-Service-Wallet',
        'access-control-expose-headers': 'ETag,Retry-After,X-Request-Id,RateLimit-Policy,RateLimit,Data-As-Of',
        'access-control-max-age': '600',
        vary: 'Origin, Access-Control-Request-Headers',
      })
      const read = await t.request('/v1/vaults/v1', { headers: { origin: 'https://other.example' } })
      expect(
        read.headers
          .get('vary')
          ?.split(',')
          .filter((n) => n.trim() === 'Origin'),
      ).toHaveLength(1)
    })
  })
})
