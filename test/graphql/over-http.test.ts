import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { answered } from '../support/bodies.js'

// What /graphql answers over HTTP when a document is costly, too large, partly wrong or about keys
// (issue 14: the cost limit with variables, the response size cap, GraphQL-over-HTTP statuses,
// key-management answers).

const GRAPHQL_RESPONSE = { 'content-type': 'application/json', accept: 'application/graphql-response+json' }
const JSON_ONLY = { 'content-type': 'application/json', accept: 'application/json' }

describe(`GraphQL over HTTP (${testBackend})`, () => {
  let t: TestApp
  let small: TestApp
  beforeAll(async () => {
    t = await createTestApp({ CORS_ORIGINS: '*' })
    small = await createTestApp({ GRAPHQL_MAX_COST: '300', GRAPHQL_MAX_RESPONSE_BYTES: '1024' })
    for (const app of [t, small]) for (let i = 0; i < 12; i++) await insertVault(app.db.prisma, `v${String(i).padStart(2, '0')}`)
  })
  afterAll(async () => {
    await small.close()
    await t.close()
  })

  const post = async (app: TestApp, body: unknown, headers: Record<string, string> = GRAPHQL_RESPONSE) => {
    const res = await app.request('/graphql', { method: 'POST', headers, body: JSON.stringify(body) })
    return { status: res.status, headers: res.headers, body: await res.json() }
  }

  describe('the cost limit', () => {
    // The attack that passed: a page size in a variable, and 15 aliased one-year series per vault.
    const series = Array.from({ length: 15 }, (_, i) => `s${i}: compositionSeries(timeframe: P1Y) { points { t weightsPct } }`).join(' ')
    const attack = `query Costly($n: Int) { vaults(first: $n) { edges { node { id ${series} } } } }`

    it('counts a page by the value of its variable, and refuses what a literal of that size would be refused', async () => {
      const refused = await post(t, { query: attack, variables: { n: 200 } })
      expect(refused.status).toBe(400)
      expect(refused.body).toEqual({
        errors: [{ message: expect.stringMatching(/^Query Cost limit of 50000 exceeded, found \d+\.$/), extensions: { code: 'bad_request' } }],
      })
      const literal = await post(t, { query: `{ vaults(first: 200) { edges { node { id ${series} } } } }` })
      expect(literal.body.errors[0].message).toBe(refused.body.errors[0].message)
    })

    it('counts a page whose size variable was not sent at the largest size a page can have', async () => {
      const missing = await post(t, { query: attack })
      expect(missing.status).toBe(400)
      expect(missing.body.errors[0].message).toMatch(/^Query Cost limit of 50000 exceeded/)
    })

    it('counts a series by its bucket count', async () => {
      const q = 'query S($tf: CompositionTimeframe!) { vault(id: "v00") { compositionSeries(timeframe: $tf) { labels } } }'
      // 30 days: 120 buckets × (series + labels) + the vault = 241, within 300.
      expect((await post(small, { query: q, variables: { tf: 'P30D' } })).status).toBe(200)
      // 7 days: 168 buckets, over it.
      expect(await post(small, { query: q, variables: { tf: 'P7D' } })).toEqual({
        status: 400,
        headers: expect.anything(),
        body: { errors: [{ message: 'Query Cost limit of 300 exceeded, found 337.', extensions: { code: 'bad_request' } }] },
      })
    })
  })

  it('refuses an answer larger than GRAPHQL_MAX_RESPONSE_BYTES with a bad_request error instead of sending it', async () => {
    const q = '{ vaults(first: 12) { edges { node { id name description apiEndpoint contract { address } } } } }'
    expect(await post(small, { query: q })).toEqual({
      status: 400,
      headers: expect.anything(),
      body: {
        errors: [
          {
            message: 'The answer would be larger than 1024 bytes (GRAPHQL_MAX_RESPONSE_BYTES); ask for fewer fields, fewer aliases or smaller pages.',
            extensions: { code: 'bad_request' },
          },
        ],
      },
    })
    // A small answer passes.
    expect((await post(small, { query: '{ vault(id: "v00") { id } }' })).body).toEqual(answered({ vault: { id: 'v00' } }))
  })

  it('measures answers that carry an error too: a bad-argument field does not take a large query past GRAPHQL_MAX_RESPONSE_BYTES', async () => {
    const q = '{ user(address: "nope") { address } vaults(first: 12) { edges { node { id name description apiEndpoint contract { address } } } } }'
    const res = await post(small, { query: q })
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      errors: [
        {
          message: 'The answer would be larger than 1024 bytes (GRAPHQL_MAX_RESPONSE_BYTES); ask for fewer fields, fewer aliases or smaller pages.',
          extensions: { code: 'bad_request' },
        },
      ],
    })
    // A small answer with an error passes, with its data and its error.
    const ok = await post(small, { query: '{ user(address: "nope") { address } vault(id: "v00") { id } }' })
    expect(ok.status).toBe(200)
    expect(ok.body.data).toEqual({ user: null, vault: { id: 'v00' } })
    expect(ok.body.errors[0].extensions.code).toBe('bad_request')
  })

  it('answers 200 when the answer carries data, keeping the good part next to the error of a bad argument', async () => {
    const res = await post(t, { query: '{ vault(id: "v01") { id } user(address: "nope") { address } }' })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      ...answered({ vault: { id: 'v01' }, user: null }),
      errors: [
        {
          message: 'address must be an EVM address: 0x followed by 40 hex digits.',
          locations: [{ line: 1, column: 27 }],
          path: ['user'],
          extensions: { code: 'bad_request' },
        },
      ],
    })
    // An unknown vault in a wallet's history leaves the wallet's other fields.
    const wallet = '0x1111111111111111111111111111111111111111'
    const history = await post(t, { query: `{ user(address: "${wallet}") { address transactions(vaultId: "nope") { edges { cursor } } } }` })
    expect(history.status).toBe(200)
    expect(history.body.data).toEqual({ user: { address: wallet, transactions: null } })
    expect(history.body.errors[0].extensions.code).toBe('not_found')
  })

  it('answers request errors 400 to application/graphql-response+json and 200 to application/json', async () => {
    const invalid = { query: '{ vault(id: "v01") { nope } }' }
    const graphqlResponse = await post(t, invalid)
    const json = await post(t, invalid, JSON_ONLY)
    expect(graphqlResponse.status).toBe(400)
    expect(json.status).toBe(200)
    expect(json.body).toEqual(graphqlResponse.body)
    expect(json.body.errors[0]).toMatchObject({ message: 'Cannot query field "nope" on type "Vault".', extensions: { code: 'bad_request' } })
  })

  it('answers anything that touches key management no-store, without the public wildcard CORS', async () => {
    const origin = { origin: 'https://dash.example' }
    const keys = await post(t, { query: '{ apiKey { id } }' }, { ...GRAPHQL_RESPONSE, ...origin })
    expect(keys.headers.get('cache-control')).toBe('no-store')
    expect(keys.headers.get('access-control-allow-origin')).toBeNull()
    const viaFragment = await post(
      t,
      { query: 'query Q { ...K } fragment K on Query { vault(id: "v01") { id } apiKey { id } }' },
      { ...GRAPHQL_RESPONSE, ...origin },
    )
    expect(viaFragment.headers.get('cache-control')).toBe('no-store')
    expect(viaFragment.headers.get('access-control-allow-origin')).toBeNull()
    // A public read keeps the public rules.
    const read = await post(t, { query: '{ vault(id: "v01") { id } }' }, { ...GRAPHQL_RESPONSE, ...origin })
    expect(read.headers.get('cache-control')).toBeNull()
    expect(read.headers.get('access-control-allow-origin')).toBe('*')
    // REST key management, errors included.
    const rest = await t.request('/v1/apiKey', { headers: origin })
    expect(rest.status).toBe(401)
    expect(rest.headers.get('cache-control')).toBe('no-store')
    expect(rest.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('answers the key mutations no-store, without the public wildcard CORS, whatever their outcome', async () => {
    const origin = { origin: 'https://dash.example' }
    for (const query of [
      'mutation { createApiKey { id } }',
      'mutation { revokeApiKey }',
      'mutation M { a: revokeApiKey b: createApiKey(keyPrefix: "x") { id } }',
    ]) {
      const res = await post(t, { query }, { ...GRAPHQL_RESPONSE, ...origin })
      expect([query, res.headers.get('cache-control'), res.headers.get('access-control-allow-origin')]).toEqual([query, 'no-store', null])
    }
  })

  it('answers refusals made before the operation is read (rate limit, body limit) under the key rules when it touches key management', async () => {
    const limited = await createTestApp({ CORS_ORIGINS: '*', RATE_LIMIT_PUBLIC_PER_MINUTE: '1', TRUST_PROXY: '1', REQUEST_BODY_LIMIT_BYTES: '2048' })
    try {
      const send = (ip: string, body: string) =>
        limited.request('/graphql', { method: 'POST', headers: { ...GRAPHQL_RESPONSE, origin: 'https://dash.example', 'x-forwarded-for': ip }, body })
      const policy = (res: Response) => [res.status, res.headers.get('cache-control'), res.headers.get('access-control-allow-origin')]
      const keyQuery = JSON.stringify({ query: 'mutation { revokeApiKey }' })
      const publicQuery = JSON.stringify({ query: '{ vault(id: "v01") { id } }' })
      expect(policy(await send('10.20.0.1', publicQuery))).toEqual([200, null, '*'])
      // Over the rate limit: the public query keeps the public rules, the key mutation gets the key rules.
      expect(policy(await send('10.20.0.1', publicQuery))).toEqual([429, 'no-store', '*'])
      expect(policy(await send('10.20.0.1', keyQuery))).toEqual([429, 'no-store', null])
      // Over the body limit nothing can be read: the key rules.
      expect(policy(await send('10.20.0.2', JSON.stringify({ query: `{ vault(id: "v01") { id } } # ${'x'.repeat(3000)}` })))).toEqual([400, 'no-store', null])
    } finally {
      await limited.close()
    }
  })

  it('counts a cursor it did not issue as bad_request in vaultgate_errors_total', async () => {
    const count = async () => {
      const text = await (await t.request('/metrics')).text()
      return Number(/^vaultgate_errors_total\{code="bad_request"\} (\d+)$/m.exec(text)?.[1] ?? 0)
    }
    const internal = async () => Number(/^vaultgate_errors_total\{code="internal"\} (\d+)$/m.exec(await (await t.request('/metrics')).text())?.[1] ?? 0)
    const [before, internalBefore] = [await count(), await internal()]
    const res = await post(t, { query: `{ vaults(after: "${Buffer.from('GPC:N:1').toString('base64')}") { edges { cursor } } }` })
    expect(res.body.errors[0]).toMatchObject({
      message: 'after is not a cursor this service issued; pass pageInfo.endCursor exactly as received.',
      extensions: { code: 'bad_request' },
    })
    expect(await count()).toBe(before + 1)
    expect(await internal()).toBe(internalBefore)
  })
})

describe(`error messages and client values (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
  })
  afterAll(() => t.close())

  it('never repeat a path or query value longer than 128 characters, nor a pasted key', async () => {
    const key = 'vaultgate_3yQnC7ZxHBkBk9SXxTbmmBsmXPYCpeHvHXSLS4Rz9Gf5'
    const long = 'x'.repeat(200)
    for (const path of [`/v1/vaults/${key}`, `/v1/vaults/${long}`, `/v1/nope/${key}`, `/v1/vaults?${key}=1&${key}=2`]) {
      const text = await (await t.request(path)).text()
      expect(text, path).not.toContain(key)
      expect(text, path).not.toContain(long)
      expect(JSON.parse(text).error.message, path).toMatch(/\(a value of \d+ characters, not repeated here\)/)
    }
    const graphql = await t.graphql(`{ user(address: "0x${'1'.repeat(40)}") { position(vaultId: "${key}") { shareBalance } } }`)
    expect(JSON.stringify(graphql.body)).not.toContain(key)
    // Short, ordinary values are still named.
    expect((await (await t.request('/v1/vaults/nope')).json()).error.message).toBe('Vault "nope" was not found.')
  })

  it("withhold a bad variable's value longer than 128 characters, a pasted key, a long literal or a long name in graphql-js' own messages", async () => {
    const key = 'vaultgate_3yQnC7ZxHBkBk9SXxTbmmBsmXPYCpeHvHXSLS4Rz9Gf5'
    const long = 'y'.repeat(5000)
    const answers = [
      await t.graphql('query Q($n: Int) { vaults(first: $n) { edges { cursor } } }', { n: long }),
      await t.graphql('query Q($n: Int) { vaults(first: $n) { edges { cursor } } }', { n: key }),
      await t.graphql('query Q($n: Int) { vaults(first: $n) { edges { cursor } } }', { n: { [long]: 1 } }),
      await t.graphql(`query Q($tf: CompositionTimeframe!) { vault(id: "v") { compositionSeries(timeframe: $tf) { labels } } }`, { tf: long }),
      await t.graphql(`{ vaults(first: "${long}") { edges { cursor } } }`),
      await t.graphql(`{ vaults(first: ${'9'.repeat(300)}) { edges { cursor } } }`),
      await t.graphql(`{ vault(id: "v") { ${long} } }`),
    ]
    for (const [i, a] of answers.entries()) {
      const text = JSON.stringify(a.body)
      expect(text, String(i)).not.toContain('y'.repeat(129))
      expect(text, String(i)).not.toContain('9'.repeat(129))
      expect(text, String(i)).not.toContain(key)
      expect(a.body.errors[0].extensions.code, String(i)).toBe('bad_request')
      expect(a.body.errors[0].message, String(i)).toMatch(/\(a value of \d+ characters, not repeated here\)/)
    }
    expect(answers[0]!.body.errors[0].message).toBe(
      'Variable "$n" got invalid value (a value of 5000 characters, not repeated here); Int cannot represent non-integer value: (a value of 5000 characters, not repeated here)',
    )
    // A short value is still named.
    const short = await t.graphql('query Q($n: Int) { vaults(first: $n) { edges { cursor } } }', { n: 'ten' })
    expect(short.body.errors[0].message).toBe('Variable "$n" got invalid value "ten"; Int cannot represent non-integer value: "ten"')
  })
})
