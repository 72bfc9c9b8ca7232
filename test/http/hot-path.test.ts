import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import type { HotHandler } from '../../src/http/hot/exchange.js'
import { importDocument } from '../../src/importer/write.js'
import { createHttpServer } from '../../src/server.js'
import { createTestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'
import { cacheClearedSince } from '../support/eventually.js'
import { jwksOf, signSession, startJwksServer, testKey } from '../support/jwt.js'

// The hot path (src/http/hot/, src/rest/hot.ts; docs/adr/0004-hot-path.md) answers POST /graphql
// and the REST reads from the socket, without Hono. A client must not be able to tell: the same
// requests over real HTTP to a gateway with it and one without (HOT_PATH=false, everything through
// Hono) get the same status, headers and body, with the same SQL statements.

const ALLOWED = 'https://dash.example'
const W = '0x2222222222222222222222222222222222222222'
const VAULT = 'query HotVault($id: ID!) { vault(id: $id) { id name tvl composition { asOf } } }'

interface Sent {
  method?: string
  path: string
  headers?: Record<string, string>
  body?: string
}

/** What a client sees, without the framing (Date, Connection, Keep-Alive, Content-Length vs chunked). */
async function seen(response: Response) {
  const headers = Object.fromEntries(
    [...response.headers].filter(([name]) => !['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name)),
  )
  // Each gateway counts on its own limiter: the fields must be there and match, their reset second may differ.
  if (headers.ratelimit !== undefined) headers.ratelimit = headers.ratelimit.replace(/;t=\d+$/, ';t=…')
  if (/^[0-9a-f-]{36}$/.test(headers['x-request-id'] ?? '')) headers['x-request-id'] = '(fresh uuid)'
  // The server's clock, and a position's `as_of` (the time of the request).
  const body = (await response.text()).replace(/"server_time_ms":\d+/g, '"server_time_ms":0').replace(/"as_of":"[^"]+"/g, '"as_of":"…"')
  return { status: response.status, headers, body }
}

/** Counts the requests a hot handler answered or gave back. */
function counting(hot: HotHandler) {
  const counter = { taken: 0 }
  const handler: HotHandler = (x) => {
    const out = hot(x)
    if (out) counter.taken++
    return out
  }
  return { handler, counter }
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function stop(server: Server) {
  server.closeAllConnections()
  return new Promise((resolve) => server.close(resolve))
}

async function setup(env: Record<string, string> = {}) {
  const t = await createTestApp({ CORS_ORIGINS: ALLOWED, RATE_LIMIT_PUBLIC_PER_MINUTE: '1000', ...env })
  const general: App = createApp({ config: t.config, db: t.db, hotPath: false })
  await general.ready
  const { handler, counter } = counting(t.app.hot!)
  const hotServer = createHttpServer({ fetch: t.app.fetch, fetchGeneral: t.app.fetchGeneral, hot: handler })
  const generalServer = createHttpServer(general)
  const urls = { hot: await listen(hotServer), general: await listen(generalServer) }
  const send = (base: string, r: Sent) => {
    const headers = { ...r.headers }
    return fetch(base + r.path, { method: r.method ?? 'GET', headers, body: r.body })
  }
  /** The same request to both gateways, hot first; each answer as seen, and the SQL each sent. */
  const both = async (r: Sent) => {
    const hot = await recordSql(async () => seen(await send(urls.hot, r)))
    const routes = await recordSql(async () => seen(await send(urls.general, r)))
    return { hot: hot.result, routes: routes.result, hotSql: hot.statements, routesSql: routes.statements }
  }
  return {
    t,
    counter,
    both,
    close: async () => {
      await stop(hotServer)
      await stop(generalServer)
      await general.close()
      await t.close()
    },
  }
}

const gql = (body: unknown, headers: Record<string, string> = {}): Sent => ({
  method: 'POST',
  path: '/graphql',
  headers: { 'content-type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
})

describe(`hot path against the routes, over HTTP (${testBackend})`, () => {
  let s: Awaited<ReturnType<typeof setup>>
  beforeAll(async () => {
    s = await setup()
    await importDocument(
      {
        vaults: [vaultDoc('hot-a', { name: 'Hot A', tvl: '12.5' }), vaultDoc('hot-b', { name: 'Hot B', tvl: '7' })],
        transactions: Array.from({ length: 7 }, (_, i) =>
          txDoc(`hot-tx-${i}`, {
            vault_id: 'hot-a',
            address: W,
            type: 'deposit',
            status: 'completed',
            amount: `${i + 1}.5`,
            timestamp: `2026-01-0${i + 1}T00:00:00Z`,
          }),
        ),
      },
      s.t.db.prisma,
    )
  })
  afterAll(async () => s.close())

  it('answers REST reads as the routes do: bodies, errors, ETags, 304, CORS, request ids', async () => {
    const etag = (await s.both({ path: '/v1/vaults/hot-a' })).hot.headers.etag
    expect(etag).toMatch(/^(W\/)?"/)
    const cases: Sent[] = [
      { path: '/v1/vaults/hot-a' },
      { path: '/v1/vaults/hot-a', headers: { origin: ALLOWED } },
      { path: '/v1/vaults/hot-a', headers: { origin: 'https://other.example' } },
      { path: '/v1/vaults/hot-a', headers: { 'if-none-match': etag! } },
      { path: '/v1/vaults/hot-a', headers: { 'if-none-match': 'W/"stale"', 'x-request-id': 'dash-42' } },
      { path: '/v1/vaults/nope' },
      { path: '/v1/vaults/hot-a?x=1&x=2' },
      { path: '/v1/vaults?limit=1' },
      { path: '/v1/vaults?limit=nope' },
      { path: '/v1/vaults/hot-a/composition' },
      { path: '/v1/vaults/hot-a/composition/series?timeframe=1y' },
      { path: '/v1/vaults/hot-a/composition/series?timeframe=2y' },
      { path: `/v1/users/${W}/vaults/hot-a/transactions?limit=3` },
      { path: `/v1/users/${W}/vaults/hot-a/transactions?cursor=garbage` },
      { path: '/v1/users/not-an-address/vaults/hot-a/transactions' },
      { path: `/v1/users/${W}/vaults/hot-a/summary` },
      { path: `/v1/users/${W}/redeems` },
      { path: '/v1/vaults/hot%2Da' },
    ]
    const before = s.counter.taken
    for (const r of cases) {
      const { hot, routes, hotSql, routesSql } = await s.both(r)
      expect([r, hot]).toEqual([r, routes])
      expect([r, hotSql]).toEqual([r, routesSql])
    }
    // Every case but the percent-encoded path was the hot path's.
    expect(s.counter.taken - before).toBe(cases.length - 1)
    // The next page, by the cursor the first page gave.
    const first = JSON.parse((await s.both({ path: `/v1/users/${W}/vaults/hot-a/transactions?limit=3` })).hot.body) as { next_cursor: string }
    const next = await s.both({ path: `/v1/users/${W}/vaults/hot-a/transactions?limit=3&cursor=${first.next_cursor}` })
    expect(next.hot).toEqual(next.routes)
    expect(JSON.parse(next.hot.body).items).toHaveLength(3)
  })

  it('answers POST /graphql as Yoga behind Hono does: data, request errors, statuses by Accept, key management', async () => {
    const accepts = [undefined, 'application/graphql-response+json', 'application/json', '*/*', 'application/xml']
    const documents: unknown[] = [
      { query: VAULT, variables: { id: 'hot-a' }, operationName: 'HotVault' },
      { query: VAULT, variables: { id: 'nope' } },
      { query: '{ vault(id: "hot-a") { id nope } }' },
      { query: '{ vault(id: ' },
      { query: VAULT, variables: { id: 42 } },
      { query: VAULT, variables: null, operationName: null, extensions: null },
      { query: '{ vaults(first: 1000) { edges { node { id } } } }' },
      { query: 'mutation { createApiKey(label: "x") { apiKey } }' },
      { query: '{ myApiKeys { id } }' },
      { query: '{ __schema { types { name } } }' },
      // Given back to the routes: not GraphQL params Yoga takes as they are.
      { variables: {} },
      { query: VAULT, other: 1 },
      [{ query: VAULT }],
      'null',
      '{"query": ',
    ]
    const before = s.counter.taken
    for (const accept of accepts) {
      for (const document of documents) {
        for (const origin of [undefined, ALLOWED]) {
          const headers: Record<string, string> = {}
          if (accept) headers.accept = accept
          if (origin) headers.origin = origin
          const r = gql(document, headers)
          const { hot, routes, hotSql, routesSql } = await s.both(r)
          expect([r, hot]).toEqual([r, routes])
          expect([r, hotSql]).toEqual([r, routesSql])
        }
      }
    }
    // All taken up by the hot path (the last five documents given back to the routes with their body).
    expect(s.counter.taken - before).toBe(accepts.length * documents.length * 2)
    const { hot } = await s.both(gql({ query: VAULT, variables: { id: 'hot-a' } }, { accept: 'application/graphql-response+json' }))
    expect(hot.status).toBe(200)
    expect(JSON.parse(hot.body).data.vault).toMatchObject({ id: 'hot-a', name: 'Hot A', tvl: '12.5' })
    expect(hot.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8')
  })

  it('leaves what it does not answer to the routes untouched', async () => {
    const before = s.counter.taken
    const cases: Sent[] = [
      gql({ query: VAULT, variables: { id: 'hot-a' } }, { accept: 'text/event-stream' }),
      { method: 'POST', path: '/graphql', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'query=%7B__typename%7D' },
      { method: 'GET', path: '/graphql?query=%7B__typename%7D', headers: { 'x-graphql-csrf': '1' } },
      { method: 'OPTIONS', path: '/v1/vaults/hot-a', headers: { origin: ALLOWED, 'access-control-request-method': 'GET' } },
      { path: '/v1/apiKey' },
      { path: '/healthz' },
    ]
    for (const r of cases) {
      const { hot, routes } = await s.both(r)
      expect([r, hot.status, hot.headers['content-type']]).toEqual([r, routes.status, routes.headers['content-type']])
    }
    expect(s.counter.taken).toBe(before)
  })
})

describe(`hot path and rate limits (${testBackend})`, () => {
  it('answers the routes’ 429 past the limit, counted once, with a read body', async () => {
    const s = await setup({ RATE_LIMIT_PUBLIC_PER_MINUTE: '2' })
    try {
      await importDocument({ vaults: [vaultDoc('hot-limit', { name: 'Limit' })] }, s.t.db.prisma)
      const rest: Sent = { path: '/v1/vaults/hot-limit' }
      const graphql = gql({ query: 'mutation { createApiKey(label: "x") { apiKey } }' }, { origin: ALLOWED })
      const answers = []
      for (const r of [rest, graphql, rest, graphql]) {
        const { hot, routes } = await s.both(r)
        expect(hot).toEqual(routes)
        answers.push(hot.status)
      }
      // The mutation without a wallet session: a GraphQL error in a 200 (Accept */*), then both refused.
      expect(answers).toEqual([200, 200, 429, 429])
      const { hot } = await s.both(graphql)
      expect(hot.headers['cache-control']).toBe('no-store')
      expect(hot.headers['retry-after']).toMatch(/^\d+$/)
    } finally {
      await s.close()
    }
  })

  it('refuses wrong wallet-session tokens past their budget as the routes do, and serves the right one from the same address', async () => {
    const es = await testKey('ES256', 'es-1')
    const jwks = await startJwksServer(jwksOf(es))
    const s = await setup({ AUTH_JWKS_URL: jwks.url, RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '2' })
    try {
      await s.t.db.prisma.allowlistEntry.create({ data: { address: W } })
      const valid = await signSession(es, { wallets: [W] })
      const forged = `${valid.slice(0, -8)}AAAAAAAA`
      const ask = (token: string) => gql({ query: '{ apiKey { id } }' }, { authorization: `Bearer ${token}` })
      const before = s.counter.taken
      const codes = []
      for (let i = 0; i < 3; i++) {
        // Each gateway counts on its own limiter: both see the same three wrong tokens.
        const { hot, routes } = await s.both(ask(forged))
        expect(hot).toEqual(routes)
        codes.push(JSON.parse(hot.body).errors.map((e: { extensions: { code: string } }) => e.extensions.code))
      }
      expect(codes).toEqual([['unauthorized'], ['unauthorized'], ['rate_limited']])
      const { hot, routes } = await s.both(ask(valid))
      expect(hot).toEqual(routes)
      expect([hot.status, JSON.parse(hot.body)]).toEqual([200, { data: { apiKey: null } }])
      expect(s.counter.taken - before).toBe(4)
    } finally {
      await s.close()
      await jwks.close()
    }
  })
})

describe(`hot path with the response cache on (${testBackend})`, () => {
  it('answers private queries itself and leaves public ones to the cache, as the routes answer them', async () => {
    const s = await setup({ RESPONSE_CACHE_TTL_MS: '60000' })
    try {
      const generation = s.t.app.responseCache.ticket()
      await importDocument(
        {
          vaults: [vaultDoc('hot-c', { name: 'Hot C', tvl: '3' })],
          transactions: [
            txDoc('hot-c-1', { vault_id: 'hot-c', address: W, type: 'deposit', status: 'completed', amount: '2', timestamp: '2026-01-01T00:00:00Z' }),
          ],
        },
        s.t.db.prisma,
      )
      await cacheClearedSince(s.t.app.responseCache, generation)
      const before = s.counter.taken
      const publicQuery = gql({ query: VAULT, variables: { id: 'hot-c' } })
      const privateQuery = gql({ query: `{ user(address: "${W}") { positions { vaultId shareBalance } } }` })
      const cases: Sent[] = [
        publicQuery,
        publicQuery,
        privateQuery,
        { path: '/v1/vaults/hot-c' },
        { path: '/v1/vaults/hot-c' },
        { path: `/v1/users/${W}/redeems` },
      ]
      for (const r of cases) {
        const { hot, routes, hotSql, routesSql } = await s.both(r)
        expect([r, hot]).toEqual([r, routes])
        expect([r, hotSql]).toEqual([r, routesSql])
      }
      // The second public query and the second REST read were hits (no SQL) on both gateways.
      expect((await s.both(publicQuery)).hotSql).toEqual([])
      // Taken up: the public queries (given back unread by the cache's rules), the private query, the wallet read.
      expect(s.counter.taken - before).toBe(5)
    } finally {
      await s.close()
    }
  })
})
