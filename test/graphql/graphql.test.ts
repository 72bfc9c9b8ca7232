import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { answered } from '../support/bodies.js'

describe(`GraphQL endpoint (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    await insertVault(t.db.prisma, 'v1', { name: 'Stable Yield', status: 'paused' })
  })
  afterAll(() => t.close())

  it('answers a vault query', async () => {
    expect(await t.graphql('query ($id: ID!) { vault(id: $id) { id name status } }', { id: 'v1' })).toEqual({
      status: 200,
      body: answered({ vault: { id: 'v1', name: 'Stable Yield', status: 'paused' } }),
    })
  })

  it('answers null for an unknown vault', async () => {
    expect((await t.graphql('{ vault(id: "nope") { id } }')).body).toEqual(answered({ vault: null }))
  })

  it('says where each custom scalar is specified (@specifiedBy), for typed clients', async () => {
    const query = `{ ${['Decimal', 'DateTime', 'UnixMs', 'Milliseconds'].map((name) => `${name}: __type(name: "${name}") { specifiedByURL }`).join(' ')} }`
    expect((await t.graphql(query)).body.data).toEqual({
      Decimal: { specifiedByURL: 'https://www.w3.org/TR/xmlschema11-2/#decimal' },
      DateTime: { specifiedByURL: 'https://scalars.graphql.org/andimarek/date-time' },
      UnixMs: { specifiedByURL: 'https://tc39.es/ecma262/#sec-time-values-and-time-range' },
      Milliseconds: { specifiedByURL: 'https://tc39.es/ecma262/#sec-time-values-and-time-range' },
    })
  })

  it('gives syntax and validation errors the bad_request code', async () => {
    const syntax = await t.graphql('{ vault(id: "v1") { id ')
    expect(syntax.status).toBe(400)
    expect(syntax.body.errors[0].extensions.code).toBe('bad_request')
    const unknown = await t.graphql('{ vault(id: "v1") { nope } }')
    expect(unknown.status).toBe(400)
    expect(unknown.body.errors).toHaveLength(1)
    expect(unknown.body.errors[0]).toMatchObject({ message: 'Cannot query field "nope" on type "Vault".', extensions: { code: 'bad_request' } })
  })

  it('serves GraphiQL to a browser outside production, with no script or style from a CDN', async () => {
    const res = await t.request('/graphql', { headers: { accept: 'text/html' } })
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toMatch(/graphiql/i)
    expect(html).not.toMatch(/<script[^>]+src=["']?https?:/i)
    expect(html).not.toMatch(/<link[^>]+stylesheet[^>]+href=["']?https?:/i)
  })

  it('answers unknown paths with the standard error body', async () => {
    const res = await t.request('/nope')
    expect(res.status).toBe(404)
    const body = await res.json()
    expect(body).toEqual({ status: 'error', error: { code: 'not_found', message: 'No route for GET "/nope".' }, server_time_ms: expect.any(Number) })
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('reports health and readiness', async () => {
    expect((await t.request('/healthz')).status).toBe(200)
    const ready = await t.request('/readyz')
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({ status: 'ok', data: { storage: testBackend === 'postgres' ? 'postgres' : 'embedded', migrations: 'applied' } })
  })
})

describe(`SQL statement recording (${testBackend})`, () => {
  it('sees each statement the client sends', async () => {
    const { recordSql } = await import('../support/sql.js')
    const t = await createTestApp()
    try {
      await insertVault(t.db.prisma, 'a')
      const { result, statements } = await recordSql(() => t.graphql('{ a: vault(id: "a") { id } b: vault(id: "b") { id } }'))
      expect(result.body).toEqual(answered({ a: { id: 'a' }, b: null }))
      // Prisma batches the two findUnique calls of one tick into a single statement.
      expect(statements).toHaveLength(1)
      expect(statements[0]).toMatch(/^SELECT .* FROM "public"\."vaults"/)
    } finally {
      await t.close()
    }
  })
})
