import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import http, { type Server } from 'node:http'
import { Writable } from 'node:stream'
import { createAdaptorServer } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import type { AppError } from '../../src/core/errors.js'
import { createLogger, logger, setLogger } from '../../src/core/log.js'
import { registry } from '../../src/core/metrics.js'
import { createRateLimits, type RateLimits } from '../../src/core/rate-limit.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { eventually } from '../support/eventually.js'

/** Set by CI (and by you, to run the shared-limit test): a Redis server the tests may write to. */
const REDIS_URL = process.env.TEST_REDIS_URL
/** A client address no other test (or test run sharing this Redis) uses. */
const freshIp = () => `10.${[...randomBytes(3)].join('.')}`

const limited = (seconds: RegExp = /^\d+$/) => ({
  status: 429,
  retryAfter: expect.stringMatching(seconds),
  body: {
    status: 'error',
    error: { code: 'rate_limited', message: expect.stringMatching(/^Too many requests from this address; retry in \d+ s\.$/) },
    server_time_ms: expect.any(Number),
  },
})

async function answer(res: Response) {
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() }
}

describe(`rate limits per client IP (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PUBLIC_PER_MINUTE: '3', TRUST_PROXY: 'true' })
    await insertVault(t.db.prisma, 'v1')
  })
  afterAll(() => t.close())

  const get = (path: string, ip: string, xff = ip) => t.request(path, { headers: { 'x-forwarded-for': xff } })

  it('answers 429 rate_limited with Retry-After once an address used its budget, REST and GraphQL alike', async () => {
    const ip = freshIp()
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await get('/v1/vaults/v1', ip)).status)
    expect(statuses).toEqual([200, 200, 200])
    expect(await answer(await get('/v1/vaults/v1', ip))).toEqual(limited())
    const gql = await t.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
      body: '{"query":"{ __typename }"}',
    })
    expect(gql.status).toBe(429)
    expect(Number(gql.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(await gql.json()).toEqual({
      errors: [{ message: expect.stringMatching(/^Too many requests from this address; retry in \d+ s\.$/), extensions: { code: 'rate_limited' } }],
    })
  })

  it('counts each address separately; health, readiness and metrics are never limited', async () => {
    const a = freshIp()
    const b = freshIp()
    for (let i = 0; i < 4; i++) await get('/v1/vaults/v1', a)
    expect((await get('/v1/vaults/v1', a)).status).toBe(429)
    expect((await get('/v1/vaults/v1', b)).status).toBe(200)
    for (const path of ['/healthz', '/readyz', '/metrics']) expect((await get(path, a)).status).toBe(200)
  })

  it('counts one client however its address is spelt, and an IPv6 client by its /64', async () => {
    const [a, b] = [randomBytes(2).toString('hex'), randomBytes(1).readUInt8()]
    const v6 = `2001:db8:${a}:${b}`
    const spellings = async (xffs: string[]) => {
      const codes = []
      for (const xff of xffs) codes.push((await get('/v1/vaults/v1', xff)).status)
      return codes
    }
    expect(await spellings([`${v6}::1`, `${v6.toUpperCase()}:0::1`, `[${v6}:0:0:0:1]:443`, `${v6}::ffff:1`])).toEqual([200, 200, 200, 429])
    // Another /64 is another client.
    expect(await spellings([`2001:db8:${a}:${b + 1}::1`])).toEqual([200])
    const v4 = freshIp()
    expect(await spellings([v4, `::ffff:${v4}`, `[::FFFF:${v4}]:8080`, `${v4}:80`])).toEqual([200, 200, 200, 429])
    // Spellings refused as ambiguous (leading zeros) are one client between them, not a new one each.
    expect(await spellings(['10.1.2.055', '10.1.2.0055', '010.1.2.55', '10.01.2.55'])).toEqual([200, 200, 200, 429])
  })

  it('takes the address the trusted proxy saw: the rightmost X-Forwarded-For entry, not what the client wrote', async () => {
    const real = freshIp()
    // A client rotating a spoofed leftmost entry still lands in its own bucket.
    const codes = []
    for (let i = 0; i < 4; i++) codes.push((await get('/v1/vaults/v1', real, `${freshIp()}, ${real}`)).status)
    expect(codes).toEqual([200, 200, 200, 429])
  })
})

describe(`rate limits without TRUST_PROXY (${testBackend})`, () => {
  let app: App
  let server: Server
  let base: string
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    app = createApp({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', RATE_LIMIT_PUBLIC_PER_MINUTE: '2' }), db: t.db })
    server = createAdaptorServer({ fetch: app.fetch }) as Server
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((r) => server.close(r))
    await app.close()
    await t.close()
  })

  /** GET from a chosen loopback address (Linux routes all of 127.0.0.0/8 to lo). */
  const getFrom = (localAddress: string, headers: Record<string, string> = {}) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/v1/vaults/nope`, { localAddress, headers, agent: false }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode!))
      })
      req.on('error', reject)
      req.end()
    })

  it("uses the socket's address and ignores X-Forwarded-For", async () => {
    const codes = []
    for (let i = 0; i < 3; i++) codes.push(await getFrom('127.0.0.1', { 'x-forwarded-for': freshIp() }))
    expect(codes).toEqual([404, 404, 429])
    // Another client address has its own budget.
    expect(await getFrom('127.0.0.2')).toBe(404)
  })
})

describe.runIf(REDIS_URL)(`rate limits shared through Redis (${testBackend})`, () => {
  let t: TestApp
  let a: App
  let b: App
  const env = { NODE_ENV: 'test', LOG_LEVEL: 'silent', RATE_LIMIT_PUBLIC_PER_MINUTE: '4', TRUST_PROXY: '1', REDIS_URL: REDIS_URL! }
  beforeAll(async () => {
    t = await createTestApp()
    a = createApp({ config: loadConfig(env), db: t.db })
    b = createApp({ config: loadConfig(env), db: t.db })
    // Both instances connected before counting starts (until then each counts in-process).
    await Promise.all([waitForRedis(a), waitForRedis(b)])
    expect(await a.limits.ready()).toBe(true)
  })
  afterAll(async () => {
    await a.close()
    await b.close()
    await t.close()
  })

  it('counts one budget across instances', async () => {
    const ip = freshIp()
    const call = (app: App) => app.fetch(new Request('http://vaultgate.test/v1/vaults/nope', { headers: { 'x-forwarded-for': ip } }))
    const codes = []
    for (const app of [a, b, a, b, a, b]) codes.push((await call(app)).status)
    expect(codes).toEqual([404, 404, 404, 404, 429, 429])
  })
})

describe.runIf(REDIS_URL)(`deployments sharing one Redis (${testBackend})`, () => {
  let t: TestApp
  let a: App
  let b: App
  const run = randomBytes(4).toString('hex')
  const env = (prefix: string) => ({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '2',
    TRUST_PROXY: '1',
    REDIS_URL: REDIS_URL!,
    REDIS_KEY_PREFIX: `vaultgate:test:${run}:${prefix}`,
  })
  beforeAll(async () => {
    t = await createTestApp()
    a = createApp({ config: loadConfig(env('staging')), db: t.db })
    b = createApp({ config: loadConfig(env('production')), db: t.db })
    await Promise.all([waitForRedis(a), waitForRedis(b)])
    expect([await a.limits.ready(), await b.limits.ready()]).toEqual([true, true])
  })
  afterAll(async () => {
    await a.close()
    await b.close()
    await t.close()
  })

  it('keeps the budgets of deployments with different REDIS_KEY_PREFIX apart, and writes every key under its prefix', async () => {
    const ip = freshIp()
    const call = (app: App) => app.fetch(new Request('http://vaultgate.test/v1/vaults/nope', { headers: { 'x-forwarded-for': ip } }))
    const codes = []
    for (const app of [a, a, a, b, b, b]) codes.push((await call(app)).status)
    expect(codes).toEqual([404, 404, 429, 404, 404, 429])
    const { Redis } = await import('ioredis')
    const redis = new Redis(REDIS_URL!)
    try {
      const keys = await redis.keys(`vaultgate:test:${run}:*`)
      expect(keys.map((k) => k.split(':').slice(0, 5).join(':')).sort()).toEqual([
        `vaultgate:test:${run}:production:public`,
        `vaultgate:test:${run}:staging:public`,
      ])
    } finally {
      redis.disconnect()
    }
  })
})

describe(`rate limits when Redis is down (${testBackend})`, () => {
  let t: TestApp
  let app: App
  const lines: Record<string, unknown>[] = []
  const previous = logger
  beforeAll(async () => {
    setLogger(
      createLogger(
        'warn',
        new Writable({
          write(chunk, _enc, done) {
            for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l))
            done()
          },
        }),
      ),
    )
    t = await createTestApp()
    // Port 1 on loopback: nothing listens, connections are refused.
    app = createApp({
      config: loadConfig({ NODE_ENV: 'test', RATE_LIMIT_PUBLIC_PER_MINUTE: '3', TRUST_PROXY: '1', REDIS_URL: 'redis://127.0.0.1:1' }),
      db: t.db,
    })
  })
  afterAll(async () => {
    setLogger(previous)
    await app.close()
    await t.close()
  })

  it('keeps answering, keeps limiting per instance, and logs a warning', async () => {
    const ip = freshIp()
    const codes = []
    for (let i = 0; i < 5; i++)
      codes.push((await app.fetch(new Request('http://vaultgate.test/v1/vaults/nope', { headers: { 'x-forwarded-for': ip } }))).status)
    expect(codes).toEqual([404, 404, 404, 429, 429])
    // The warning comes with the refused connection (ioredis is loaded, then connects, in the background).
    const warnings = () => lines.filter((l) => l.msg === 'Redis unavailable: rate limits are counted per instance until it is back')
    await eventually(() => expect(warnings()).toHaveLength(1), { timeoutMs: 5000 })
    const metrics = await (await app.fetch(new Request('http://vaultgate.test/metrics'))).text()
    expect(metrics).toMatch(/^vaultgate_rate_limit_decisions_total\{bucket="public",result="fallback"\} [1-9]\d*$/m)
  })
})

async function waitForRedis(app: App) {
  if (app.limits.store === 'redis') await eventually(() => app.limits.ready(), { timeoutMs: 5000, what: 'Redis ready' }).catch(() => {})
}

describe.runIf(REDIS_URL)(`rate limits when Redis stalls (${testBackend})`, () => {
  const previous = logger
  let proxy: TcpProxy
  let limits: RateLimits
  beforeAll(async () => {
    const target = new URL(REDIS_URL!)
    proxy = new TcpProxy(target.hostname, Number(target.port || 6379))
    await proxy.start()
    target.host = `127.0.0.1:${proxy.port}`
    setLogger(createLogger('silent')) // the warning is checked in 'rate limits when Redis is down'
    const config = loadConfig({ NODE_ENV: 'test', RATE_LIMIT_PUBLIC_PER_MINUTE: '5', REDIS_URL: target.toString() })
    limits = createRateLimits(config, { redisPrefix: `vaultgate:test:${randomBytes(4).toString('hex')}`, redisCooldownMs: 1500 })
    await eventually(() => limits.ready(), { timeoutMs: 5000, what: 'Redis ready' })
  })
  afterAll(async () => {
    setLogger(previous)
    limits.close()
    proxy.restore()
    await proxy.cut()
  })

  const decisions = async () => {
    const text = await registry.metrics()
    const n = (result: string) =>
      Number(new RegExp(`^vaultgate_rate_limit_decisions_total\\{bucket="public",result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
    return { allowed: n('allowed'), fallback: n('fallback'), limited: n('limited') }
  }

  it('waits on a stalled Redis once, then counts in process for the cool-down without sending Redis anything, still limiting; then tries Redis again', async () => {
    const ip = freshIp()
    await limits.consume('public', ip) // through Redis
    const before = await decisions()
    proxy.stall()
    // The first request meets the stall (the command timeout) and is counted in process.
    await limits.consume('public', ip)
    const sentAtFailure = proxy.chunks
    // Later ones ask Redis nothing during the cool-down, and the in-process budget still holds.
    const outcomes: string[] = []
    for (let i = 0; i < 6; i++)
      outcomes.push(
        await limits.consume('public', ip).then(
          () => 'ok',
          (e: AppError) => e.code,
        ),
      )
    expect(proxy.chunks).toBe(sentAtFailure)
    expect(outcomes).toEqual(['ok', 'ok', 'ok', 'ok', 'rate_limited', 'rate_limited'])
    expect(await decisions()).toEqual({ allowed: before.allowed, fallback: before.fallback + 5, limited: before.limited + 2 })

    // After the cool-down, Redis is asked again (and answers once the stall ends).
    proxy.restore()
    await new Promise((r) => setTimeout(r, 1600))
    await limits.consume('public', freshIp())
    expect(proxy.chunks).toBeGreaterThan(sentAtFailure)
    expect((await decisions()).allowed).toBe(before.allowed + 1)
  })
})

describe(`wrong admin and internal tokens (${testBackend})`, () => {
  const ADMIN = 'admin-token-for-bearer-limits-0123456789abcdef'
  const INTERNAL = 'internal-token-for-bearer-limits-0123456789abcdef'
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ ADMIN_TOKEN: ADMIN, INTERNAL_TOKEN: INTERNAL, TRUST_PROXY: '1', RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '3' })
  })
  afterAll(() => t.close())

  const admin = (ip: string, token: string) => t.request('/admin/allowlist', { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': ip } })
  const verify = (ip: string, token: string) =>
    t.request('/internal/v1/apiKey/verify', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-forwarded-for': ip },
      body: JSON.stringify({ apiKey: 'x' }),
    })

  it('answers 429 to an address after a burst of wrong tokens, to its wrong tokens only; other addresses are served', async () => {
    const ip = freshIp()
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await admin(ip, `wrong-${i}-${ADMIN}`)).status)
    expect(statuses).toEqual([401, 401, 401])
    const refused = await admin(ip, 'wrong-again')
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(await refused.json()).toEqual({
      status: 'error',
      error: { code: 'rate_limited', message: expect.stringMatching(/^Too many requests with a wrong token from this address; retry in \d+ s\.$/) },
      server_time_ms: expect.any(Number),
    })
    expect((await admin(ip, 'wrong-yet-again')).status).toBe(429)
    // Another address keeps its own budget.
    const other = freshIp()
    expect((await admin(other, 'wrong')).status).toBe(401)
  })

  it('serves the right tokens from an address locked out by wrong admin tokens, and keeps the internal budget apart (a shared NAT)', async () => {
    const ip = freshIp()
    const statuses = []
    for (let i = 0; i < 11; i++) statuses.push((await admin(ip, `wrong-${i}-${ADMIN}`)).status)
    expect(statuses).toEqual([401, 401, 401, ...Array(8).fill(429)])
    // The order exchange behind the same address: its right internal token is answered, early or by the routes.
    const ok = await verify(ip, INTERNAL)
    expect(ok.status).toBe(200)
    expect(await ok.json()).toMatchObject({ status: 'ok', data: { active: false, reason: 'unknown' } })
    // The right admin token is accepted too, and the locked-out wrong ones still refused.
    expect((await admin(ip, ADMIN)).status).toBe(200)
    expect((await admin(ip, 'wrong-again')).status).toBe(429)
    // Wrong internal tokens have a budget of their own, untouched by the admin ones.
    const internal = []
    for (let i = 0; i < 4; i++) internal.push((await verify(ip, `wrong-${i}`)).status)
    expect(internal).toEqual([401, 401, 401, 429])
    expect((await verify(ip, INTERNAL)).status).toBe(200)
  })

  it('never counts the right token', async () => {
    const ip = freshIp()
    const statuses = []
    for (let i = 0; i < 10; i++) statuses.push((await admin(ip, ADMIN)).status)
    expect(statuses).toEqual(Array(10).fill(200))
  })
})
