import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testBackend } from '../support/db.js'
import { createKeysTestApp, INTERNAL_TOKEN, type KeysTestApp } from '../support/keys.js'
import { answered } from '../support/bodies.js'

const A = '0xa000000000000000000000000000000000000001'
const B = '0xb000000000000000000000000000000000000002'

const limitedBody = (what: string) => ({
  status: 'error',
  error: { code: 'rate_limited', message: expect.stringMatching(new RegExp(`^Too many requests ${what}; retry in \\d+ s\\.$`)) },
  server_time_ms: expect.any(Number),
})

describe(`key management limits (${testBackend})`, () => {
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({
      allowlist: [A, B],
      env: { RATE_LIMIT_KEYS_PER_MINUTE: '3', RATE_LIMIT_VERIFY_PER_MINUTE: '2', CORS_KEY_ORIGINS: 'https://dash.example' },
    })
  })
  afterAll(() => t.close())

  it('limits key operations per wallet (create, inspect, revoke alike), with Retry-After; other wallets are unaffected', async () => {
    expect((await t.create(A)).status).toBe(200)
    expect((await t.get(A)).status).toBe(200)
    expect((await t.revoke(A)).status).toBe(200)
    const over = await t.create(A)
    expect(over.status).toBe(429)
    expect(over.body).toEqual(limitedBody('for this wallet'))
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // Nothing was created by the refused request.
    expect(await t.db.prisma.apiKey.count({ where: { wallet: A } })).toBe(1)
    expect((await t.create(B)).status).toBe(200)
  })

  it('counts every key field of a GraphQL document, so aliases cannot multiply the budget', async () => {
    const headers = await t.session([B])
    // B used 1 of 3: a document asking for three keys gets two of them (mutations run in order).
    const res = await t.graphql('mutation { a: createApiKey { id } b: createApiKey { id } c: createApiKey { id } }', {}, headers)
    expect(res.status).toBe(429)
    expect(res.body).toEqual({
      data: null,
      errors: [
        {
          message: expect.stringMatching(/^Too many requests for this wallet/),
          locations: expect.any(Array),
          path: ['c'],
          extensions: { code: 'rate_limited' },
        },
      ],
    })
    expect(await t.db.prisma.apiKey.count({ where: { wallet: B } })).toBe(3)
    expect(await t.db.prisma.apiKey.count({ where: { wallet: B, revokedAt: null } })).toBe(1)
  })

  it('limits verification per key, not per caller: another key still verifies', async () => {
    const wallet = '0xc000000000000000000000000000000000000003'
    await t.db.prisma.allowlistEntry.create({ data: { address: wallet } })
    const key = (await t.create(wallet)).body.data.apiKey as string
    expect((await t.verify(key)).body.data.active).toBe(true)
    expect((await t.verify(key)).body.data.active).toBe(true)
    const over = await t.verify(key)
    expect(over.status).toBe(429)
    expect(over.body).toEqual(limitedBody('for this key'))
    expect((await t.verify('vaultgate_unknownkey')).status).toBe(200)
  })

  it('refuses key management from web origins outside CORS_KEY_ORIGINS, on REST and GraphQL, before reading the token', async () => {
    const wallet = '0xd000000000000000000000000000000000000004'
    await t.db.prisma.allowlistEntry.create({ data: { address: wallet } })
    const headers = await t.session([wallet])
    const refused = {
      status: 'error',
      error: { code: 'unauthorized', message: 'Key management is not allowed from the web origin "https://evil.example".' },
      server_time_ms: expect.any(Number),
    }

    const rest = await t.request('/v1/apiKey', {
      method: 'POST',
      headers: { ...headers, origin: 'https://evil.example', 'content-type': 'application/json' },
      body: '{}',
    })
    expect(rest.status).toBe(401)
    expect(await rest.json()).toEqual(refused)
    const gql = await t.graphql('mutation { createApiKey { id } }', {}, { ...headers, origin: 'https://evil.example' })
    expect(gql.body.errors[0].extensions.code).toBe('unauthorized')
    expect(await t.db.prisma.apiKey.count({ where: { wallet } })).toBe(0)
    // Public reads from that origin still work.
    expect((await t.graphql('{ __typename }', {}, { origin: 'https://evil.example' })).body).toEqual(answered({ __typename: 'Query' }))

    // The listed origin, the gateway's own (GraphiQL) and non-browser clients (no Origin) may.
    const dash = await t.request('/v1/apiKey', { headers: { ...headers, origin: 'https://dash.example' } })
    expect(dash.status).toBe(200)
    expect(dash.headers.get('access-control-allow-origin')).toBe('https://dash.example')
    expect((await t.graphql('{ apiKey { id } }', {}, { ...headers, origin: 'http://vaultgate.test' })).body).toEqual(answered({ apiKey: null }))
    expect((await t.get(wallet)).status).toBe(200)
  })

  it('keeps the internal verify route closed to browsers: no CORS headers even for a listed origin', async () => {
    const res = await t.request('/internal/v1/apiKey/verify', {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json', origin: 'https://dash.example' },
      body: JSON.stringify({ apiKey: 'vaultgate_x' }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
  })
})
