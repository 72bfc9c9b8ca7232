import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { importDocument } from '../../src/importer/write.js'
import { createHttpServer } from '../../src/server.js'
import { createTestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'
import { cacheClearedSince } from '../support/eventually.js'
import { jwksOf, signSession, startJwksServer, testKey } from '../support/jwt.js'
import { answered } from '../support/bodies.js'

// One pipeline, two adapters (docs/adr/0005-one-pipeline.md): a request over real HTTP (the
// node:http adapter writes the answer to the socket) and the same request given to app.fetch in
// process (the Web adapter) get the same status, headers and body, with the same SQL statements.
// Each side is a gateway of its own over the same database (each counts on its own limiter).

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
  const other: App = createApp({ config: t.config, db: t.db })
  await other.ready
  const server = createHttpServer(t.app)
  const base = await listen(server)
  const init = (r: Sent) => ({ method: r.method ?? 'GET', headers: { ...r.headers }, body: r.body })
  /** The same request over HTTP, then in process; each answer as seen, and the SQL each sent. */
  const both = async (r: Sent) => {
    const http = await recordSql(async () => seen(await fetch(base + r.path, init(r))))
    const inProcess = await recordSql(async () => seen(await other.fetch(new Request(base + r.path, init(r)))))
    return { http: http.result, inProcess: inProcess.result, httpSql: http.statements, inProcessSql: inProcess.statements }
  }
  return {
    t,
    both,
    close: async () => {
      await stop(server)
      await other.close()
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

describe(`over HTTP and in process, the same answers (${testBackend})`, () => {
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

  it('answers REST reads the same: bodies, errors, ETags, 304, CORS, request ids', async () => {
    const etag = (await s.both({ path: '/v1/vaults/hot-a' })).http.headers.etag
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
    for (const r of cases) {
      const { http, inProcess, httpSql, inProcessSql } = await s.both(r)
      expect([r, http]).toEqual([r, inProcess])
      expect([r, httpSql]).toEqual([r, inProcessSql])
    }
    // The next page, by the cursor the first page gave.
    const first = JSON.parse((await s.both({ path: `/v1/users/${W}/vaults/hot-a/transactions?limit=3` })).http.body) as { next_cursor: string }
    const next = await s.both({ path: `/v1/users/${W}/vaults/hot-a/transactions?limit=3&cursor=${first.next_cursor}` })
    expect(next.http).toEqual(next.inProcess)
    expect(JSON.parse(next.http.body).items).toHaveLength(3)
  })

  it('answers POST /graphql the same: data, request errors, statuses by Accept, key management', async () => {
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
      // Not GraphQL params Yoga takes as they are: Yoga refuses them in its own words.
      { variables: {} },
      { query: VAULT, other: 1 },
      [{ query: VAULT }],
      'null',
      '{"query": ',
    ]
    for (const accept of accepts) {
      for (const document of documents) {
        for (const origin of [undefined, ALLOWED]) {
          const headers: Record<string, string> = {}
          if (accept) headers.accept = accept
          if (origin) headers.origin = origin
          const r = gql(document, headers)
          const { http, inProcess, httpSql, inProcessSql } = await s.both(r)
          expect([r, http]).toEqual([r, inProcess])
          expect([r, httpSql]).toEqual([r, inProcessSql])
        }
      }
    }
    const { http } = await s.both(gql({ query: VAULT, variables: { id: 'hot-a' } }, { accept: 'application/graphql-response+json' }))
    expect(http.status).toBe(200)
    expect(JSON.parse(http.body).data.vault).toMatchObject({ id: 'hot-a', name: 'Hot A', tvl: '12.5' })
    expect(http.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8')
  })

  it('answers event streams, form posts, GET, preflights, key management and probes the same', async () => {
    const cases: Sent[] = [
      gql({ query: VAULT, variables: { id: 'hot-a' } }, { accept: 'text/event-stream' }),
      { method: 'POST', path: '/graphql', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'query=%7B__typename%7D' },
      { method: 'GET', path: '/graphql?query=%7B__typename%7D', headers: { 'x-graphql-csrf': '1' } },
      { method: 'OPTIONS', path: '/v1/vaults/hot-a', headers: { origin: ALLOWED, 'access-control-request-method': 'GET' } },
      { path: '/v1/apiKey' },
      { path: '/healthz' },
    ]
    for (const r of cases) {
      const { http, inProcess } = await s.both(r)
      expect([r, http.status, http.headers['content-type']]).toEqual([r, inProcess.status, inProcess.headers['content-type']])
    }
  })
})

describe(`both adapters and rate limits (${testBackend})`, () => {
  it('answers 429 past the limit, counted once, with a read body', async () => {
    const s = await setup({ RATE_LIMIT_PUBLIC_PER_MINUTE: '2' })
    try {
      await importDocument({ vaults: [vaultDoc('hot-limit', { name: 'Limit' })] }, s.t.db.prisma)
      const rest: Sent = { path: '/v1/vaults/hot-limit' }
      const graphql = gql({ query: 'mutation { createApiKey(label: "x") { apiKey } }' }, { origin: ALLOWED })
      const answers = []
      for (const r of [rest, graphql, rest, graphql]) {
        const { http, inProcess } = await s.both(r)
        expect(http).toEqual(inProcess)
        answers.push(http.status)
      }
      // The mutation without a wallet session: a GraphQL error in a 200 (Accept */*), then both refused.
      expect(answers).toEqual([200, 200, 429, 429])
      const { http } = await s.both(graphql)
      expect(http.headers['cache-control']).toBe('no-store')
      expect(http.headers['retry-after']).toMatch(/^\d+$/)
    } finally {
      await s.close()
    }
  })

  it('refuses wrong wallet-session tokens past their budget, and serves the right one from the same address', async () => {
    const es = await testKey('ES256', 'es-1')
    const jwks = await startJwksServer(jwksOf(es))
    const s = await setup({ AUTH_JWKS_URL: jwks.url, RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '2' })
    try {
      await s.t.db.prisma.allowlistEntry.create({ data: { address: W } })
      const valid = await signSession(es, { wallets: [W] })
      const forged = `${valid.slice(0, -8)}AAAAAAAA`
      const ask = (token: string) => gql({ query: '{ apiKey { id } }' }, { authorization: `Bearer ${token}` })
      const codes = []
      for (let i = 0; i < 3; i++) {
        // Each gateway counts on its own limiter: both see the same three wrong tokens.
        const { http, inProcess } = await s.both(ask(forged))
        expect(http).toEqual(inProcess)
        codes.push(JSON.parse(http.body).errors.map((e: { extensions: { code: string } }) => e.extensions.code))
      }
      expect(codes).toEqual([['unauthorized'], ['unauthorized'], ['rate_limited']])
      const { http, inProcess } = await s.both(ask(valid))
      expect(http).toEqual(inProcess)
      expect([http.status, JSON.parse(http.body)]).toEqual([200, answered({ apiKey: null })])
    } finally {
      await s.close()
      await jwks.close()
    }
  })
})

describe(`both adapters with the response cache on (${testBackend})`, () => {
  it('answers public queries from the cache and private ones each time, the same', async () => {
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
        const { http, inProcess, httpSql, inProcessSql } = await s.both(r)
        expect([r, http]).toEqual([r, inProcess])
        expect([r, httpSql]).toEqual([r, inProcessSql])
      }
      // The second public query and the second REST read were hits (no SQL) on both adapters.
      expect((await s.both(publicQuery)).httpSql).toEqual([])
    } finally {
      await s.close()
    }
  })
})
