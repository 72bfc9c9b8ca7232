import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { importDocument } from '../../src/importer/write.js'
import { testBackend } from '../support/db.js'
import { INTERNAL_TOKEN, createKeysTestApp, type KeysTestApp } from '../support/keys.js'
import { recordSql } from '../support/sql.js'
import { vaultDoc } from '../support/wallet-data.js'
import { cacheClearedSince } from '../support/eventually.js'
import { answered } from '../support/bodies.js'

// A public read answered from the response cache (the pipeline's cache step, src/http/pipeline/index.ts)
// and the same read computed by its route (a gateway with the cache off, over the same database)
// must look the same to the client: the same status, body and headers (security headers, CSP,
// CORS, ETag, Cache-Control, Data-As-Of), the same rate-limit count; and the hit sends no SQL.

const ALLOWED = 'https://dash.example'
const W1 = '0x1111111111111111111111111111111111111111'
const VAULT_QUERY = 'query FastVault($id: ID!) { vault(id: $id) { id name tvl } }'
const VAULT_QUERY_ID = `sha256:${createHash('sha256').update(VAULT_QUERY).digest('hex')}`

/** A request as a socket delivers it: a POST body comes with its Content-Length. */
function request(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Request {
  const headers = { ...init.headers }
  if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body))
  return new Request(`http://vaultgate.test${path}`, { method: init.method, headers, body: init.body })
}

const graphqlRequest = (headers: Record<string, string> = {}) =>
  request('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers },
    body: JSON.stringify({ query: VAULT_QUERY, variables: { id: 'fast-a' } }),
  })

async function seen(response: Response, { keepRequestId = false } = {}) {
  const headers = Object.fromEntries([...response.headers].filter(([name]) => keepRequestId || name !== 'x-request-id'))
  // Both apps count the client on their own counters: the fields must be there, their numbers may differ.
  if (headers.ratelimit !== undefined) {
    expect(headers.ratelimit).toMatch(/^"ip";r=\d+;t=\d+$/)
    headers.ratelimit = '"ip";r=…;t=…'
  }
  const text = await response.text()
  // The verify answer carries the server's time (and what is left of the key's life and rate-limit
  // window, measured on it); everything else must match byte for byte.
  const body = text.replace(/"(server_time_ms|expiresInMs|resetMs)":\d+/g, '"$1":0')
  return { status: response.status, headers, body }
}

describe(`cache hits (${testBackend})`, () => {
  let t: KeysTestApp
  let routesOnly: App

  let dir: string

  beforeAll(async () => {
    // A trusted document, for the GET by documentId.
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-cache-hits-'))
    const file = path.join(dir, 'persisted-documents.json')
    await writeFile(file, JSON.stringify({ [VAULT_QUERY_ID]: VAULT_QUERY }))
    t = await createKeysTestApp({ allowlist: [W1], env: { RESPONSE_CACHE_TTL_MS: '60000', CORS_ORIGINS: ALLOWED, GRAPHQL_DOCUMENTS_FILE: file } })
    const generation = t.app.responseCache.ticket()
    await importDocument({ vaults: [vaultDoc('fast-a', { name: 'Fast A', tvl: '12.5' }), vaultDoc('fast-b', { name: 'Fast B', tvl: '7' })] }, t.db.prisma)
    await cacheClearedSince(t.app.responseCache, generation)
    routesOnly = createApp({ config: { ...t.config, responseCache: { ...t.config.responseCache, ttlMs: 0 } }, db: t.db })
    await routesOnly.ready
  })
  afterAll(async () => {
    await routesOnly.close()
    await t.close()
    await rm(dir, { recursive: true, force: true })
  })

  /** The same request (made twice: a miss fills the cache, the second is a hit) to both apps. */
  async function both(make: () => Request, options?: { keepRequestId?: boolean }) {
    await (await t.app.fetch(make())).text()
    await (await routesOnly.fetch(make())).text()
    const { result: fast, statements } = await recordSql(async () => seen(await t.app.fetch(make()), options))
    return { fast, routes: await seen(await routesOnly.fetch(make()), options), statements }
  }

  it('answers a cached REST read as its route does, for every CORS outcome and revalidation', async () => {
    const etag = (await t.app.fetch(request('/v1/vaults/fast-a'))).headers.get('etag')!
    const cases: Record<string, Record<string, string>> = {
      plain: {},
      'allowed origin': { origin: ALLOWED },
      'other origin': { origin: 'https://other.example' },
      'current etag': { 'if-none-match': etag },
      'stale etag': { 'if-none-match': 'W/"stale"' },
    }
    for (const [name, headers] of Object.entries(cases)) {
      const { fast, routes, statements } = await both(() => request('/v1/vaults/fast-a', { headers }))
      expect([name, fast]).toEqual([name, routes])
      expect([name, statements]).toEqual([name, []])
    }
    const { fast } = await both(() => request('/v1/vaults/fast-a', { headers: { origin: ALLOWED } }))
    expect(fast.status).toBe(200)
    expect(fast.headers['access-control-allow-origin']).toBe(ALLOWED)
    expect(fast.headers.vary).toBe('Origin')
    expect(fast.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
    expect((await both(() => request('/v1/vaults/fast-a', { headers: { 'if-none-match': etag } }))).fast.status).toBe(304)
    expect((await both(() => request('/v1/vaults?limit=1'))).fast).toEqual((await both(() => request('/v1/vaults?limit=1'))).routes)
  })

  it('echoes the caller’s request id, or gives a fresh one', async () => {
    const { fast, routes } = await both(() => request('/v1/vaults/fast-b', { headers: { 'x-request-id': 'dash-42' } }), { keepRequestId: true })
    expect(fast).toEqual(routes)
    expect(fast.headers['x-request-id']).toBe('dash-42')
    const a = (await t.app.fetch(request('/v1/vaults/fast-b'))).headers.get('x-request-id')
    const b = (await t.app.fetch(request('/v1/vaults/fast-b'))).headers.get('x-request-id')
    expect(a).toMatch(/^[0-9a-f-]{36}$/)
    expect(a).not.toBe(b)
  })

  it('answers a cached GraphQL query as Yoga does', async () => {
    const { fast, routes, statements } = await both(() => graphqlRequest({ origin: ALLOWED }))
    expect(fast).toEqual(routes)
    expect(fast.status).toBe(200)
    expect(JSON.parse(fast.body)).toEqual(answered({ vault: { id: 'fast-a', name: 'Fast A', tvl: '12.5' } }))
    expect(statements).toEqual([])
  })

  it('answers a cached GET of a trusted document as its computation does, ETag, revalidation and CORS included', async () => {
    const target = `/graphql?documentId=${VAULT_QUERY_ID}&variables=${encodeURIComponent(JSON.stringify({ id: 'fast-b' }))}`
    const get =
      (headers: Record<string, string> = {}) =>
      () =>
        request(target, { headers: { accept: 'application/graphql-response+json', ...headers } })
    const { fast, routes, statements } = await both(get({ origin: ALLOWED }))
    expect(fast).toEqual(routes)
    expect(statements).toEqual([])
    expect({ status: fast.status, cacheControl: fast.headers['cache-control'], vary: fast.headers.vary, body: JSON.parse(fast.body) }).toEqual({
      status: 200,
      cacheControl: 'public, max-age=10',
      vary: 'Accept, Origin',
      body: answered({ vault: { id: 'fast-b', name: 'Fast B', tvl: '7' } }),
    })
    const revalidated = await both(get({ 'if-none-match': fast.headers.etag! }))
    expect(revalidated.fast).toEqual(revalidated.routes)
    expect(revalidated.fast.status).toBe(304)
  })

  it('answers a key verification the same on every gateway, errors included', async () => {
    const key = (await t.create(W1)).body.data as { apiKey: string }
    const verify = (apiKey: string) =>
      request('/internal/v1/apiKey/verify', {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey }),
      })
    for (const apiKey of [key.apiKey, 'vaultgate_nope']) {
      const { fast, routes } = await both(() => verify(apiKey))
      expect(fast).toEqual(routes)
      expect(fast.status).toBe(200)
      expect(fast.headers['cache-control']).toBe('no-store')
    }
    const bad = await both(() =>
      request('/internal/v1/apiKey/verify', {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: '{"apiKey":42}',
      }),
    )
    expect(bad.fast).toEqual(bad.routes)
    expect(JSON.parse(bad.fast.body).error).toEqual({ code: 'bad_request', message: 'apiKey must be a string.' })
  })

  it('computes what is not cached, and never caches a wallet’s read', async () => {
    const computed = async (r: () => Request) => (await recordSql(async () => (await t.app.fetch(r())).status)).statements.length
    expect(await computed(() => request('/v1/vaults/nope'))).toBeGreaterThan(0)
    expect(await computed(() => request('/v1/vaults/nope'))).toBeGreaterThan(0)
    const wallet = () => request(`/v1/users/${W1}/redeems`)
    await computed(wallet)
    expect(await computed(wallet)).toBeGreaterThan(0)
    const privateQuery = () =>
      request('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: `{ user(address: "${W1}") { positions { vaultId } } }` }),
      })
    await computed(privateQuery)
    expect(await computed(privateQuery)).toBeGreaterThan(0)
  })
})

describe(`cache hits and rate limits (${testBackend})`, () => {
  it('counts a hit once, and answers 429 past the limit', async () => {
    const t = await createKeysTestApp({ env: { RESPONSE_CACHE_TTL_MS: '60000', RATE_LIMIT_PUBLIC_PER_MINUTE: '3' } })
    try {
      await importDocument({ vaults: [vaultDoc('fast-limit', { name: 'Limit' })] }, t.db.prisma)
      t.app.responseCache.clear()
      const statuses = []
      for (let i = 0; i < 4; i++) statuses.push((await t.app.fetch(request('/v1/vaults/fast-limit'))).status)
      expect(statuses).toEqual([200, 200, 200, 429])
      const limited = await t.app.fetch(request('/v1/vaults/fast-limit'))
      expect(limited.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(await limited.json()).toEqual({
        status: 'error',
        error: { code: 'rate_limited', message: expect.stringMatching(/^Too many requests from this address; retry in \d+ s\.$/) },
        server_time_ms: expect.any(Number),
      })
    } finally {
      await t.close()
    }
  })
})
