import http, { type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { createAdaptorServer } from '@hono/node-server'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { openDatabase, sqlObservers, type Database, type SqlEvent } from '../../src/db/client.js'
import { importDocument } from '../../src/importer/write.js'
import { generateRawKey } from '../../src/keys/format.js'
import { createLogger, logger, setLogger } from '../../src/core/log.js'
import { freshStorage, testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { recordSql } from '../support/sql.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { classify, Tally } from '../support/report.js'

const WALLET = '0x00000000000000000000000000000000000000b1'
const INTERNAL_TOKEN = 'internal-token-for-database-faults-0123456789'
const UNAVAILABLE = {
  status: 'error',
  error: { code: 'unavailable', message: 'The database is unavailable; try again shortly.' },
  server_time_ms: expect.any(Number),
}

/**
 * The public routes under test, REST and GraphQL: each answers 200 while the database is fine. In a
 * fault REST answers 503. The GraphQL query answers 503 too when it had to read the data times its
 * Data-As-Of comes from (after an import or while the change feed is down: src/freshness/answer.ts,
 * never an answer without them); with the times in memory its answer carries data (`vault` is
 * nullable, so it is `{"vault": null}`) and is 200 with the `unavailable` code in its error
 * (GraphQL over HTTP). Either way `unavailable`, never `internal`.
 */
const routes: [string, RequestInit?][] = [
  ['/v1/vaults/v1'],
  ['/v1/vaults?limit=5'],
  ['/v1/vaults/v1/composition'],
  [`/v1/users/${WALLET}/redeems`],
  [`/v1/users/${WALLET}/vaults/v1/transactions`],
  [
    '/graphql',
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ vault(id: "v1") { id tvl composition { asOf } } }' }) },
  ],
]

describe.runIf(testBackend === 'postgres')('PostgreSQL faults: stopped, unreachable, slow', () => {
  let proxy: TcpProxy
  let db: Database
  let app: App
  let directUrl: string

  // A small pool and short timeouts keep the scenarios fast; the behaviour is the same at the defaults.
  // No response cache: every request here must reach the database (the deadline test repeats one query).
  const settings = {
    DB_POOL_MAX: '4',
    DB_CONNECT_TIMEOUT_MS: '1000',
    DB_STATEMENT_TIMEOUT_MS: '500',
    REQUEST_TIMEOUT_MS: '2000',
    DB_IDLE_TIMEOUT_MS: '60000',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
    RATE_LIMIT_VERIFY_PER_MINUTE: '0',
    RESPONSE_CACHE_TTL_MS: '0',
    INTERNAL_TOKEN,
  }

  // Every fault is logged as an error by design; keep the CI log to the [reliability] lines.
  const previousLogger = logger
  beforeAll(async () => {
    setLogger(createLogger('silent'))
    const storage = await freshStorage()
    if (storage.mode !== 'postgres') throw new Error('unreachable')
    directUrl = storage.url
    const target = new URL(storage.url)
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432))
    await proxy.start()
    target.host = `127.0.0.1:${proxy.port}`
    // No webhook worker: its polls would cross the faulty proxy and count among the statements observed.
    const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: target.toString(), WEBHOOK_WORKER: 'false', ...settings })
    db = await openDatabase(config)
    await db.migrate()
    app = createApp({ config, db })
    await app.ready
    await insertVault(db.prisma, 'v1')
    await insertVault(db.prisma, 'v2')
    await importDocument(
      {
        compositions: [
          {
            vault_id: 'v1',
            as_of: '2026-01-01T00:00:00.000Z',
            positions: [{ platform: 'Aave', asset: 'USD Coin', symbol: 'USDC', pct: 100, apy_est_pct: 4, icon: 'https://icons.test/usdc.svg' }],
          },
        ],
      },
      db.prisma,
    )
  })
  afterAll(async () => {
    setLogger(previousLogger)
    proxy.restore()
    await app.close()
    await db.close()
    await proxy.cut()
  })

  const call = (path: string, init?: RequestInit) => app.fetch(new Request(`http://vaultgate.test${path}`, init))

  /** Every route `rounds` times, all at once; tallies the answers. */
  async function burst(tally: Tally, rounds: number) {
    const answers = await Promise.all(Array.from({ length: rounds }, () => routes.map(([path, init]) => call(path, init).then(classify))).flat())
    for (const a of answers) tally.add(a.status, a.code)
    return answers
  }

  /** Every route of `rounds` bursts unavailable: REST 503, GraphQL 503 or 200 with the error in its data (see `routes`). */
  function expectUnavailable(tally: Tally, rounds: number, extra503 = 0) {
    const counts = tally.counts()
    const graphqlWithData = counts['200 unavailable'] ?? 0
    expect(graphqlWithData).toBeLessThanOrEqual(rounds)
    expect(counts).toEqual({
      '503 unavailable': routes.length * rounds - graphqlWithData + extra503,
      ...(graphqlWithData > 0 ? { '200 unavailable': graphqlWithData } : {}),
    })
  }

  async function expectHealthy(scenario: string) {
    const tally = new Tally(scenario)
    await burst(tally, 2)
    tally.print()
    expect(tally.counts()).toEqual({ '200': routes.length * 2 })
    expect((await call('/readyz')).status).toBe(200)
  }

  it('answers every route while PostgreSQL is up', async () => {
    await expectHealthy('database up')
  })

  it('answers unavailable on every route while PostgreSQL refuses connections (REST 503, GraphQL 503 or 200 with its data), and recovers without a restart', async () => {
    await proxy.cut()
    // Started again whatever the assertions say: the tests after this one need the database back.
    try {
      const tally = new Tally('database stopped (connections refused and dropped)')
      const answers = await burst(tally, 3)
      const ready = await call('/readyz')
      tally.print({ readyz: ready.status })
      expectUnavailable(tally, 3)
      expect(ready.status).toBe(503)
      expect(await ready.json()).toEqual(UNAVAILABLE)
      expect(answers.find((a) => a.body.status === 'error')!.body).toEqual(UNAVAILABLE)
      const message = 'The database is unavailable; try again shortly.'
      for (const graphql of answers.filter((a) => a.body.errors))
        expect(graphql.body).toEqual(
          graphql.status === 200
            ? {
                data: { vault: null },
                errors: [{ message, locations: expect.any(Array), path: ['vault'], extensions: { code: 'unavailable' } }],
                // It ran (its one field failed): what it cost, as every executed answer says (decisions §15).
                extensions: { cost: { requested: expect.any(Number), limit: 50_000 } },
              }
            : { errors: [{ message, extensions: { code: 'unavailable' } }] },
        )
    } finally {
      await proxy.start()
    }
    await expectHealthy('database back after stop')
  })

  it('answers unavailable within the timeouts while PostgreSQL is unreachable (traffic held), and recovers', async () => {
    proxy.stall()
    const tally = new Tally('database unreachable (network partition)')
    const started = Date.now()
    await burst(tally, 2)
    const ready = await call('/readyz')
    const elapsed = Date.now() - started
    tally.print({ readyz: ready.status })
    expectUnavailable(tally, 2)
    expect(ready.status).toBe(503)
    // Bounded by REQUEST_TIMEOUT_MS (2 s) for the routes and DB_CONNECT_TIMEOUT_MS (1 s) for
    // readiness, not by the partition: without those deadlines these requests would never answer.
    expect(elapsed).toBeLessThan(15_000)

    proxy.restore()
    await expectHealthy('database reachable again')
  })

  it('answers unavailable at the statement timeout while the database is slow (a lock held), with nothing left waiting', async () => {
    // A long migration or a stuck transaction: every read waits for this lock.
    const blocker = new pg.Client({ connectionString: directUrl })
    await blocker.connect()
    const tally = new Tally('database slow (locks held; statement timeout 500 ms, pool of 4, connect timeout 1 s)')
    try {
      await blocker.query('BEGIN')
      await blocker.query('LOCK TABLE vaults, composition_snapshots, allocations, transactions IN ACCESS EXCLUSIVE MODE')
      // Six times the pool: the first requests hit the statement timeout, the ones queued for a
      // connection give up at the connect timeout, instead of waiting for the lock to go.
      const answers = await burst(tally, 4)
      // No gateway session is still queued behind the lock once everything was answered.
      const { rows } = await blocker.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'vaultgate' AND datname = current_database() AND wait_event_type = 'Lock'`,
      )
      tally.print({ 'sessions still waiting': rows[0]!.n, 'pool waiting': db.pool!.waitingCount })
      expectUnavailable(tally, 4)
      expect(answers[0]!.body).toEqual(UNAVAILABLE)
      expect(rows[0]!.n).toBe(0)
      expect(db.pool!.waitingCount).toBe(0)
    } finally {
      await blocker.query('ROLLBACK').catch(() => {})
      await blocker.end()
    }
    await expectHealthy('database fast again')
  })

  it('stops a query at the request deadline: no resolver starts and no further SQL is sent after it', async () => {
    const query = JSON.stringify({ query: '{ vaults(first: 5) { edges { node { id composition { asOf } } } } }' })
    const post = () => call('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: query })

    // Without a slow database the query takes two statements: the page, then the compositions.
    const control = await recordSql(async () => classify(await post()))
    expect(control.result.status).toBe(200)
    expect(control.statements).toHaveLength(2)

    // Each packet now takes 3 s: the page's statement outlives the 2 s deadline.
    const statements: string[] = []
    let pageDone!: () => void
    const pageStatement = new Promise<void>((r) => (pageDone = r))
    const observer = (e: SqlEvent) => {
      statements.push(e.sql)
      pageDone()
    }
    sqlObservers.add(observer)
    let answer: Awaited<ReturnType<typeof classify>>
    try {
      proxy.delay(3000)
      answer = await classify(await post())
      proxy.restore()
      await pageStatement
      // Give a second statement every chance to be sent (it would now run without delay).
      await new Promise((r) => setTimeout(r, 1000))
    } finally {
      sqlObservers.delete(observer)
    }
    const slow = { result: answer, statements }
    const tally = new Tally('request deadline (2 s) against a 3 s database round trip')
    tally.add(slow.result.status, slow.result.code)
    tally.print({ 'statements sent': slow.statements.length, 'statements without deadline': control.statements.length })
    expect(slow.result).toEqual({
      status: 503,
      code: 'unavailable',
      body: { errors: [{ message: 'The request took longer than 2000 ms; try again shortly.', extensions: { code: 'unavailable' } }] },
    })
    expect(slow.statements).toEqual([control.statements[0]])
  })

  const verify = (apiKey: string) =>
    call('/internal/v1/apiKey/verify', {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ apiKey }),
    })
  const VERIFY_UNAVAILABLE = {
    status: 'error',
    error: { code: 'unavailable', message: 'API key state cannot be checked right now; refuse the key and retry shortly.' },
    server_time_ms: expect.any(Number),
  }

  it('fails key verification closed within DB_CONNECT_TIMEOUT_MS while PostgreSQL is unreachable: 30 concurrent verifies all 503', async () => {
    // Keys of the right form that no cache holds: each one must be read.
    const keys = Array.from({ length: 30 }, () => generateRawKey('probe'))
    proxy.stall()
    const tally = new Tally('key verification, database unreachable (connect timeout 1 s)')
    const started = performance.now()
    const answers = await Promise.all(
      keys.map(async (k) => {
        const res = await verify(k)
        return { status: res.status, body: await res.json(), ms: performance.now() - started }
      }),
    )
    const slowest = Math.max(...answers.map((a) => a.ms))
    for (const a of answers) tally.add(a.status, a.body.error?.code)
    tally.print({ 'slowest ms': Math.round(slowest) })
    proxy.restore()
    expect(tally.counts()).toEqual({ '503 unavailable': 30 })
    expect(answers[0]!.body).toEqual(VERIFY_UNAVAILABLE)
    // DB_CONNECT_TIMEOUT_MS is 1 s; the margin is for a loaded machine.
    expect(slowest).toBeLessThan(1000 + 750)
    await expectHealthy('database reachable again after the verifies')
    expect((await (await verify(keys[0]!)).json()).data).toMatchObject({ active: false, reason: 'unknown' })
  })

  it('answers unavailable, never internal, when PostgreSQL closes connections in the middle of queries (ORM and raw SQL alike)', async () => {
    const tally = new Tally('connections closed mid-query')
    // Every packet waits 400 ms: the queries are on the wire when the proxy cuts them.
    proxy.delay(400)
    const inFlight = Promise.all([
      ...routes.map(([path, init]) => call(path, init).then(classify)),
      ...Array.from({ length: 3 }, () => verify(generateRawKey('cut')).then(classify)),
    ])
    await new Promise((r) => setTimeout(r, 150))
    // Reset, not closed: the driver reads ECONNRESET, which Prisma reports as ConnectionClosed
    // (P1017 for the ORM's queries, P2010 with the adapter's error for raw SQL).
    await proxy.cut({ reset: true })
    const answers = await inFlight
    for (const a of answers) tally.add(a.status, a.code)
    tally.print()
    // The routes once, and the three verifications (503).
    expectUnavailable(tally, 1, 3)
    await proxy.start()
    proxy.restore()
    await expectHealthy('database back after the cut')
  })

  it('reads key state once for a verification that fails, and logs it once', async () => {
    const lines: Record<string, unknown>[] = []
    setLogger(
      createLogger(
        'info',
        new Writable({
          write: (chunk, _enc, done) => {
            lines.push(JSON.parse(String(chunk)))
            done()
          },
        }),
      ),
    )
    const statements: string[] = []
    const observer = (e: SqlEvent) => statements.push(e.sql)
    try {
      await proxy.cut()
      sqlObservers.add(observer)
      const answer = await verify(generateRawKey('once'))
      expect(answer.status).toBe(503)
      expect(await answer.json()).toEqual(VERIFY_UNAVAILABLE)
    } finally {
      sqlObservers.delete(observer)
      setLogger(createLogger('silent'))
      await proxy.start()
    }
    expect(statements.filter((sql) => sql.includes('FROM api_keys'))).toHaveLength(1)
    const errors = lines.filter((l) => ['warn', 'error', 'fatal'].includes(l.level as string)).map((l) => l.msg)
    expect(errors).toEqual(['API key verification unavailable'])
    expect(lines.filter((l) => l.msg === 'request').map((l) => l.status)).toEqual([503])
    await expectHealthy('database back after the failed verification')
  })

  it('logs a client that went away before its answer at info, counted with status 499, never as a 500 with a stack', async () => {
    const lines: Record<string, any>[] = []
    setLogger(
      createLogger(
        'info',
        new Writable({
          write: (chunk, _enc, done) => {
            lines.push(JSON.parse(String(chunk)))
            done()
          },
        }),
      ),
    )
    const server = createAdaptorServer({ fetch: app.fetch }) as Server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const metric = async (route: string) => {
      const text = await (await call('/metrics')).text()
      const line = text.split('\n').find((l) => l.startsWith('vaultgate_http_requests_total{') && l.includes(`route="${route}"`) && l.includes('status="499"'))
      return Number(line?.split(' ').pop() ?? 0)
    }
    const before = { rest: await metric('/v1/vaults/:vault_id'), graphql: await metric('/graphql') }
    try {
      // Every packet to the database waits 1.5 s: both requests are still waiting when their clients leave.
      proxy.delay(1500)
      const leave = (path: string, init: http.RequestOptions, body?: string) =>
        new Promise<void>((resolve) => {
          const req = http.request({ host: '127.0.0.1', port, path, ...init })
          req.on('error', () => resolve())
          req.end(body)
          setTimeout(() => {
            req.destroy()
            resolve()
          }, 300)
        })
      await Promise.all([
        leave('/v1/vaults/v1', { method: 'GET' }),
        leave('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' } }, JSON.stringify({ query: '{ vault(id: "v2") { id } }' })),
      ])
      // Until both requests have finished on the server side.
      await vi.waitFor(() => expect(lines.filter((l) => l.msg === 'request' && l.route !== '/metrics')).toHaveLength(2), { timeout: 10_000, interval: 100 })
    } finally {
      proxy.restore()
      setLogger(createLogger('silent'))
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
    const answered = lines.filter((l) => l.msg === 'request' && l.route !== '/metrics').map((l) => ({ route: l.route, status: l.status, level: l.level }))
    expect(answered.sort((a, b) => a.route.localeCompare(b.route))).toEqual([
      { route: '/graphql', status: 499, level: 'info' },
      { route: '/v1/vaults/:vault_id', status: 499, level: 'info' },
    ])
    // Errors: none (the slow statements still waiting on the database are warned of, as always).
    expect(lines.filter((l) => ['error', 'fatal'].includes(l.level) || (l.level === 'warn' && l.msg !== 'slow SQL statement'))).toEqual([])
    expect(JSON.stringify(lines)).not.toContain('"stack"')
    expect({ rest: await metric('/v1/vaults/:vault_id'), graphql: await metric('/graphql') }).toEqual({ rest: before.rest + 1, graphql: before.graphql + 1 })
    await expectHealthy('database fast again after the clients left')
  })
})
