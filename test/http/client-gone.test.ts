import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger, logger, setLogger } from '../../src/core/log.js'
import { registry } from '../../src/core/metrics.js'
import { createHttpServer } from '../../src/server.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'

// A client that sends its headers and half its body, then closes the connection: nobody is left
// to answer. Every door (the node:http hot path, the early answers, the Hono routes) counts it
// once as 499, logs it at info without a stack, and never as an outage (503, "database unavailable").

const ADMIN = 'admin-token-for-client-gone-0123456789abcdef'
const INTERNAL = 'internal-token-for-client-gone-0123456789abcdef'

const requestCount = async (route: string, status: string) => {
  const text = await registry.metrics()
  const line = text
    .split('\n')
    .find((l) => l.startsWith('vaultgate_http_requests_total{') && l.includes(`route="${route}"`) && l.includes(`status="${status}"`))
  return line ? Number(line.split(' ').pop()) : 0
}
const errorCount = async (code: string) => {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`vaultgate_errors_total{code="${code}"}`))
  return line ? Number(line.split(' ').pop()) : 0
}

// A body is read by the cache step when the response cache is on (the key of a POST /graphql is
// its body), by the route when it is off.
describe.each([
  ['the response cache on', '5000'],
  ['the response cache off', '0'],
])(`a client that leaves mid-body, with %s (${testBackend})`, (_name, ttl) => {
  let t: TestApp
  let server: Server
  let port: number
  const lines: Record<string, unknown>[] = []
  const previous = logger
  beforeAll(async () => {
    setLogger(
      createLogger(
        'info',
        new Writable({
          write(chunk, _enc, done) {
            for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l))
            done()
          },
        }),
      ),
    )
    t = await createTestApp({ ADMIN_TOKEN: ADMIN, INTERNAL_TOKEN: INTERNAL, RESPONSE_CACHE_TTL_MS: ttl })
    server = createHttpServer(t.app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
    await t.close()
    setLogger(previous)
  })

  /** Sends the headers and the first bytes of a 4,000-byte body, then closes the connection. */
  const leaveMidBody = (path: string, headers: Record<string, string>) =>
    new Promise<void>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        const head = Object.entries({ host: `127.0.0.1:${port}`, 'content-type': 'application/json', 'content-length': '4000', ...headers })
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')
        socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n{"query":"{ __typename `, () => {
          socket.destroy()
          resolve()
        })
      })
      socket.on('error', reject)
    })

  it.each([
    ['/admin/import', { authorization: `Bearer ${ADMIN}` }],
    ['/internal/v1/apiKey/verify', { authorization: `Bearer ${INTERNAL}` }],
    ['/graphql', {}],
    ['/v1/apiKey', { authorization: 'Bearer some.session.token' }],
  ])('%s: 499 counted once, one info line without a stack, no error', async (route, headers) => {
    const before = { gone: await requestCount(route, '499'), unavailable: await requestCount(route, '503'), errors: await errorCount('unavailable') }
    lines.length = 0
    await leaveMidBody(route, headers)
    for (let i = 0; i < 200 && (await requestCount(route, '499')) === before.gone; i++) await new Promise((r) => setTimeout(r, 10))
    expect(await requestCount(route, '499')).toBe(before.gone + 1)
    expect(await requestCount(route, '503')).toBe(before.unavailable)
    expect(await errorCount('unavailable')).toBe(before.errors)
    const mine = lines.filter((l) => l.route === route || l.path === route)
    expect(mine).toEqual([
      {
        level: 'info',
        time: expect.any(Number),
        service: 'vaultgate',
        requestId: expect.any(String),
        method: 'POST',
        route,
        status: 499,
        ms: expect.any(Number),
        msg: 'request',
      },
    ])
    expect(lines.filter((l) => l.level !== 'info' && l.level !== 'debug')).toEqual([])
  })
})
