import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'

// Incremental delivery (decisions §15): @defer and @stream through Yoga's plugin, answered as
// multipart/mixed (or SSE) to a client that accepts it; the cost limit sees the whole operation.

/** The JSON parts of a multipart/mixed answer, in order. */
async function parts(res: Response): Promise<Record<string, unknown>[]> {
  const boundary = /boundary="?([^";]+)"?/.exec(res.headers.get('content-type') ?? '')![1]!
  const text = await res.text()
  return text
    .split(`--${boundary}`)
    .map((p) => p.split('\r\n\r\n').slice(1).join('\r\n\r\n').trim())
    .filter((p) => p.startsWith('{'))
    .map((p) => JSON.parse(p) as Record<string, unknown>)
}

describe(`@defer and @stream (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ GRAPHQL_MAX_COST: '200' })
    await insertVault(t.db.prisma, 'd1', { name: 'Deferred', status: 'paused', tvl: '12.5' })
    await insertVault(t.db.prisma, 'd2', { name: 'Streamed', tvl: '7' })
  })
  afterAll(() => t.close())

  const post = (query: string, accept: string) =>
    t.request('/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify({ query }) })

  it('sends the vault card first and the deferred fields after, as multipart/mixed', async () => {
    const res = await post('{ vault(id: "d1") { id name ... @defer { tvl status } } }', 'multipart/mixed')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^multipart\/mixed/)
    // Never stored by a shared cache, never compressed (each part must reach the client as it is written).
    expect(res.headers.get('content-encoding')).toBeNull()
    const [first, ...rest] = await parts(res)
    expect(first).toEqual({ data: { vault: { id: 'd1', name: 'Deferred' } }, hasNext: true })
    expect(rest.at(-1)).toMatchObject({ hasNext: false })
    const incremental = rest.flatMap((p) => (p.incremental as { data: unknown; path: unknown[] }[] | undefined) ?? [])
    expect(incremental).toEqual([{ data: { tvl: '12.5', status: 'paused' }, path: ['vault'] }])
  })

  it('streams a list after its first items', async () => {
    const res = await post('{ vaults(first: 2) { edges @stream(initialCount: 1) { node { id } } } }', 'multipart/mixed')
    expect(res.status).toBe(200)
    const [first, ...rest] = await parts(res)
    expect(first).toEqual({ data: { vaults: { edges: [{ node: { id: 'd1' } }] } }, hasNext: true })
    const items = rest.flatMap((p) => (p.incremental as { items: unknown[] }[] | undefined) ?? []).flatMap((i) => i.items)
    expect(items).toEqual([{ node: { id: 'd2' } }])
  })

  it('answers a client that accepts only JSON with the whole result refused, not half of it', async () => {
    const res = await post('{ vault(id: "d1") { id ... @defer { tvl } } }', 'application/json')
    expect(res.status).toBe(406)
  })

  it('counts deferred fields in the cost of the whole operation', async () => {
    // 50 vaults × a deferred composition: over GRAPHQL_MAX_COST, refused before anything is sent.
    const res = await post('{ vaults(first: 50) { edges { node { id ... @defer { composition { positions { pct } } } } } } }', 'multipart/mixed')
    expect(res.status).toBe(400)
    expect(await parts(res)).toEqual([{ errors: [{ message: 'Query Cost limit of 200 exceeded, found 350.', extensions: { code: 'bad_request' } }] }])
  })
})
