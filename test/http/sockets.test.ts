import http, { type Server } from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpServer } from '../../src/server.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'

// What a client sees on the wire when a request is refused before its body is read, or before
// the app sees it at all (src/server.ts createHttpServer).

const ADMIN = 'admin-token-for-socket-tests-0123456789abcdef'

describe(`refusals over real sockets (${testBackend})`, () => {
  let t: TestApp
  let server: Server
  let port: number
  beforeAll(async () => {
    t = await createTestApp({ ADMIN_TOKEN: ADMIN, INTERNAL_TOKEN: `internal-${ADMIN}`, TRUST_PROXY: '1', RATE_LIMIT_PUBLIC_PER_MINUTE: '2' })
    server = createHttpServer(t.app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await t.close()
  })

  /** Sends `raw` on a new socket and reads until the server closes it (or 5 s pass). */
  const rawExchange = (raw: string | Buffer) =>
    new Promise<{ text: string; closedByServer: boolean }>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1')
      const chunks: Buffer[] = []
      const timer = setTimeout(() => {
        socket.destroy()
        resolve({ text: Buffer.concat(chunks).toString(), closedByServer: false })
      }, 5000)
      socket.on('data', (c) => chunks.push(c))
      socket.on('error', reject)
      socket.on('end', () => {
        clearTimeout(timer)
        resolve({ text: Buffer.concat(chunks).toString(), closedByServer: true })
        socket.destroy()
      })
      socket.write(raw)
    })

  /** Sends a WebSocket upgrade of /graphql and reads the HTTP answer (head and body). */
  const upgrade = (protocol: string, extra = '') =>
    new Promise<{ head: string; body: string }>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1')
      let text = ''
      socket.on('data', (c) => {
        text += c
        const [head, body = ''] = text.split('\r\n\r\n')
        const length = /\r\ncontent-length: (\d+)/i.exec(head!)?.[1]
        if (length && Buffer.byteLength(body) >= Number(length)) {
          socket.destroy()
          resolve({ head: head!, body })
        }
      })
      socket.on('error', reject)
      socket.write(
        'GET /graphql HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
          `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: ${protocol}\r\n${extra}\r\n`,
      )
    })

  it('answers a WebSocket upgrade of another subprotocol on /graphql by naming graphql-transport-ws, not the CSRF header', async () => {
    // subscriptions-transport-ws' subprotocol, as old Apollo clients offer it: a request like any other.
    const { head, body } = await upgrade('graphql-ws')
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
    expect(JSON.parse(body).errors).toEqual([
      {
        message:
          'WebSocket on /graphql speaks the graphql-transport-ws subprotocol (Sec-WebSocket-Protocol: graphql-transport-ws), for subscriptions; or use Server-Sent Events (Accept: text/event-stream).',
        extensions: { code: 'bad_request' },
      },
    ])
  })

  it('refuses a graphql-transport-ws upgrade from a client over its public limit with 429 before upgrading', async () => {
    const from = 'X-Forwarded-For: 203.0.113.77\r\n'
    for (let i = 0; i < 2; i++)
      expect(
        (await fetch(`http://127.0.0.1:${port}/graphql?query={__typename}`, { headers: { 'x-graphql-csrf': '1', 'x-forwarded-for': '203.0.113.77' } })).status,
      ).toBe(200)
    const { head, body } = await upgrade('graphql-transport-ws', from)
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 429 Too Many Requests')
    expect(head).toMatch(/^Retry-After: \d+$/im)
    expect(JSON.parse(body)).toMatchObject({ status: 'error', error: { code: 'rate_limited' } })
  })

  it('answers a header block over Node’s limit with 431, the standard error body and Connection: close', async () => {
    const { text, closedByServer } = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    const [head, body] = text.split('\r\n\r\n')
    expect(head!.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large')
    expect(head).toMatch(/^Connection: close$/im)
    expect(head).toMatch(/^Content-Type: application\/json$/im)
    expect(JSON.parse(body!)).toEqual({
      status: 'error',
      error: { code: 'bad_request', message: `The request headers are larger than ${http.maxHeaderSize} bytes.` },
      server_time_ms: expect.any(Number),
    })
    expect(closedByServer).toBe(true)
  })

  it('answers a malformed request line with 400 and the standard error body', async () => {
    const { text } = await rawExchange('NOT HTTP AT ALL\r\n\r\n')
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
    expect(JSON.parse(text.split('\r\n\r\n')[1]!).error).toEqual({ code: 'bad_request', message: 'The request is not valid HTTP.' })
  })

  describe('keeps a keep-alive connection usable after refusing a 2 MB body it did not read', () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 'x')
    let reader = 0
    // [name, path, headers, status, Connection]: a refused body left unread closes the connection;
    // a rate-limited /graphql body is read (to know whether it selects key management), so the
    // connection stays usable as it is.
    const refusals: [string, string, Record<string, string>, number, string][] = [
      ['the body limit', '/graphql', { 'content-type': 'application/json' }, 400, 'close'],
      ['a wrong admin token', '/admin/import', { authorization: 'Bearer wrong', 'content-type': 'application/json' }, 401, 'close'],
      ['a wrong internal token', '/internal/v1/apiKey/verify', { authorization: 'Bearer wrong', 'content-type': 'application/json' }, 401, 'close'],
      ['the verify body limit', '/internal/v1/apiKey/verify', { authorization: `Bearer internal-${ADMIN}`, 'content-type': 'application/json' }, 400, 'close'],
      ['a rate limit', '/v1/apiKey', { 'content-type': 'application/json', 'x-forwarded-for': '10.9.9.9' }, 429, 'close'],
      ['a rate limit on /graphql', '/graphql', { 'content-type': 'application/json', 'x-forwarded-for': '10.9.9.10' }, 429, 'keep-alive'],
    ]
    // Within the body limit, so that the rate limit is what refuses it.
    const sizeFor = (status: number) => (status === 429 ? big.subarray(0, 90 * 1024) : big)
    for (const [name, path, headers, status, connection] of refusals) {
      it(name, async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
        const send = (method: string, p: string, h: Record<string, string>, body?: Buffer) =>
          new Promise<{ status: number; connection: string | undefined; text: string }>((resolve, reject) => {
            const req = http.request({ host: '127.0.0.1', port, path: p, method, headers: h, agent }, (res) => {
              const chunks: Buffer[] = []
              res.on('data', (c) => chunks.push(c))
              res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, text: Buffer.concat(chunks).toString() }))
            })
            req.on('error', reject)
            req.end(body)
          })
        try {
          // The rate-limit case spends the address' budget first.
          if (status === 429) for (let i = 0; i < 2; i++) await send('GET', '/v1/vaults/nope', { 'x-forwarded-for': headers['x-forwarded-for']! })
          const refused = await send('POST', path, headers, sizeFor(status))
          expect(refused.status).toBe(status)
          expect(refused.connection).toBe(connection)
          expect(JSON.parse(refused.text).error?.code ?? JSON.parse(refused.text).errors?.[0]?.extensions?.code).toBeTruthy()
          // The client's next request on its pool succeeds (on the same connection once the body
          // was drained, or on a new one after Connection: close).
          const next = await send('GET', '/healthz', {})
          expect(next.status).toBe(200)
          expect(JSON.parse(next.text)).toMatchObject({ status: 'ok' })
          // A body that was read keeps the connection open.
          const read = await send(
            'POST',
            '/graphql',
            { 'content-type': 'application/json', 'x-forwarded-for': `10.8.${++reader}.1` },
            Buffer.from('{"query":"{ __typename }"}'),
          )
          expect([read.status, read.connection]).toEqual([200, 'keep-alive'])
        } finally {
          agent.destroy()
        }
      })
    }
  })
})
