import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chooseEncoding, compressAnswer } from '../../src/http/compression.js'
import { createHttpServer } from '../../src/server.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'

interface Raw {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
}

const BUNDLE = '/docs/swagger-ui-bundle.js'

describe(`compression of large answers over HTTP (${testBackend})`, () => {
  let t: TestApp
  let server: http.Server
  let port: number
  beforeAll(async () => {
    t = await createTestApp()
    server = createHttpServer(t.app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await t.close()
  })

  /** The bytes on the wire, as sent (node:http does not decode). */
  const get = (path: string, headers: Record<string, string>) =>
    new Promise<Raw>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path, headers }, (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
        })
        .on('error', reject)
    })

  // The API reference's Swagger UI bundle (~1.5 MB): GraphiQL's page, once the large answer here, is
  // now a small shell whose bundle is compressed ahead by its own route (src/http/routes/graphiql.ts).
  it('sends a large static file compressed as the client asks, the same bytes once decoded', async () => {
    const html = { accept: '*/*' }
    const plain = await get(BUNDLE, { ...html, 'accept-encoding': 'identity' })
    expect(plain.status).toBe(200)
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.headers.vary).toMatch(/Accept-Encoding/)
    expect(plain.body.length).toBeGreaterThan(1_000_000)

    const br = await get(BUNDLE, { ...html, 'accept-encoding': 'gzip, deflate, br' })
    expect(br.headers['content-encoding']).toBe('br')
    expect(br.headers.vary).toMatch(/Accept-Encoding/)
    expect(Number(br.headers['content-length'])).toBe(br.body.length)
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true)

    const gz = await get(BUNDLE, { ...html, 'accept-encoding': 'br;q=0.5, gzip' })
    expect(gz.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true)

    expect((await get(BUNDLE, { ...html, 'accept-encoding': 'br;q=0, gzip;q=0' })).headers['content-encoding']).toBeUndefined()
    expect((await get(BUNDLE, { ...html, 'accept-encoding': '*' })).headers['content-encoding']).toBe('br')

    expect(br.body.length).toBeLessThan(plain.body.length / 3)
    console.info(`[compression] swagger-ui-bundle.js: ${plain.body.length} bytes, br ${br.body.length}, gzip ${gz.body.length}`)
  })

  const post = (path: string, body: string, headers: Record<string, string>) =>
    new Promise<Raw>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      })
      req.on('error', reject)
      req.end(body)
    })

  it('compresses a large uncached GraphQL answer of the hot path (docs/adr/0004-hot-path.md) by the same rule', async () => {
    const query = JSON.stringify({ query: '{ __schema { types { name description fields { name description } } } }' })
    const plain = await post('/graphql', query, { 'accept-encoding': 'identity' })
    expect(plain.status).toBe(200)
    expect(plain.body.length).toBeGreaterThan(8192)
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.headers.vary).toMatch(/Accept-Encoding/)
    const gz = await post('/graphql', query, { 'accept-encoding': 'gzip' })
    expect(gz.status).toBe(200)
    expect(gz.headers['content-encoding']).toBe('gzip')
    expect(gz.headers.vary).toMatch(/Accept-Encoding/)
    expect(Number(gz.headers['content-length'])).toBe(gz.body.length)
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true)
  })

  it('leaves small answers alone: no encoding, no Vary', async () => {
    const res = await get('/healthz', { 'accept-encoding': 'gzip, br' })
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(res.headers.vary ?? '').not.toMatch(/Accept-Encoding/)
    expect(JSON.parse(res.body.toString()).status).toBe('ok')
  })

  it("keeps revalidation: a compressed file's ETag is the weak form of its own, and answers 304", async () => {
    const plain = await get('/docs/swagger-ui-bundle.js', { 'accept-encoding': 'identity' })
    const strong = plain.headers.etag!
    expect(strong).toMatch(/^"[^"]+"$/)
    const gz = await get('/docs/swagger-ui-bundle.js', { 'accept-encoding': 'gzip' })
    expect(gz.headers['content-encoding']).toBe('gzip')
    expect(gz.headers.etag).toBe(`W/${strong}`)
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true)
    const again = await get('/docs/swagger-ui-bundle.js', { 'accept-encoding': 'gzip', 'if-none-match': gz.headers.etag! })
    expect(again.status).toBe(304)
    expect(again.body.length).toBe(0)
  })
})

describe('the compression policy', () => {
  it('reads Accept-Encoding with its q-values', () => {
    expect(chooseEncoding(undefined)).toBeUndefined()
    expect(chooseEncoding('identity')).toBeUndefined()
    expect(chooseEncoding('gzip')).toBe('gzip')
    expect(chooseEncoding('gzip, br')).toBe('br')
    expect(chooseEncoding('br;q=0.2, gzip;q=0.8')).toBe('gzip')
    expect(chooseEncoding('GZIP;Q=0.5, *;q=0.1')).toBe('gzip')
    expect(chooseEncoding('*;q=0')).toBeUndefined()
    expect(chooseEncoding('deflate')).toBeUndefined()
  })

  it('never compresses an event stream, a no-transform answer, or with 0 as the threshold', async () => {
    const big = 'data: x\n\n'.repeat(10_000)
    const answer = (headers: Record<string, string>) => ({ status: 200, headers: { ...headers }, body: big })
    for (const [min, headers] of [
      [8192, { 'content-type': 'text/event-stream' }],
      [8192, { 'content-type': 'application/json', 'cache-control': 'no-store, no-transform' }],
      [0, { 'content-type': 'application/json' }],
    ] as const) {
      const out = await compressAnswer(answer(headers), 'GET', 'gzip', min)
      expect(out.headers['content-encoding']).toBeUndefined()
      expect(out.body).toBe(big)
    }
    const json = await compressAnswer(answer({ 'content-type': 'application/json' }), 'GET', 'gzip', 8192)
    expect(json.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(json.body as unknown as Buffer).toString()).toBe(big)
  })
})
