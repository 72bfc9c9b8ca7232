import { getIntrospectionQuery } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { GRAPHIQL_ASSETS } from '../../src/graphql/graphiql-page.js'
import { answered } from '../support/bodies.js'

const GQL = { 'content-type': 'application/json', accept: 'application/graphql-response+json' }
const badRequest = (message: string) => ({ errors: [{ message, extensions: { code: 'bad_request' } }] })

describe(`GraphQL limits (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({
      GRAPHQL_MAX_DEPTH: '4',
      GRAPHQL_MAX_ALIASES: '3',
      GRAPHQL_MAX_COST: '300',
      GRAPHQL_MAX_TOKENS: '300',
      GRAPHQL_MAX_DIRECTIVES: '2',
      REQUEST_BODY_LIMIT_BYTES: '4096',
    })
    await insertVault(t.db.prisma, 'v1')
  })
  afterAll(() => t.close())

  const post = async (body: unknown, headers: Record<string, string> = GQL) => {
    const res = await t.request('/graphql', { method: 'POST', headers, body: JSON.stringify(body) })
    return { status: res.status, body: await res.json() }
  }

  it('answers a query within every limit', async () => {
    expect(await post({ query: '{ a: vault(id: "v1") { id contract { address } } b: vault(id: "v1") { id } }' })).toEqual({
      status: 200,
      body: {
        data: { a: { id: 'v1', contract: { address: '0x00000000000000000000000000000000000000aa' } }, b: { id: 'v1' } },
        // a: vault 1 + id 1 + contract (1 + address 1) = 4; b: vault 1 + id 1 = 2.
        extensions: { cost: { requested: 6, limit: 300 } },
      },
    })
  })

  it('says on every answer what it cost against GRAPHQL_MAX_COST, with the request’s variables', async () => {
    const query = 'query Page($n: Int) { vaults(first: $n) { edges { node { id } } } }'
    const costs = []
    for (const n of [1, 2, 10]) costs.push((await post({ query, variables: { n } })).body.extensions)
    // vaults × (1 + edges (1 + node (1 + id))): 4 a vault.
    expect(costs).toEqual([{ cost: { requested: 4, limit: 300 } }, { cost: { requested: 8, limit: 300 } }, { cost: { requested: 40, limit: 300 } }])
    // A partial answer (a field failed, the rest answered) too; a refusal has none.
    expect(await post({ query: '{ vault(id: "nope") { id } }' })).toEqual({
      status: 200,
      body: { data: { vault: null }, extensions: { cost: { requested: 2, limit: 300 } } },
    })
    expect((await post({ query: '{ vaults(first: 200) { edges { node { id } } } }' })).body.extensions).toBeUndefined()
  })

  it('refuses a query deeper than GRAPHQL_MAX_DEPTH with bad_request', async () => {
    // vaults > edges > node > contract > address: depth 5
    expect(await post({ query: '{ vaults(first: 1) { edges { node { contract { address } } } } }' })).toEqual({
      status: 400,
      body: { errors: [{ message: 'Query depth limit of 4 exceeded, found 5.', extensions: { code: 'bad_request' } }] },
    })
    // Fragments count like inline selections.
    const viaFragment = await post({ query: 'query { vaults(first: 1) { ...E } } fragment E on VaultConnection { edges { node { contract { address } } } }' })
    expect(viaFragment.status).toBe(400)
    expect(viaFragment.body.errors[0].message).toBe('Query depth limit of 4 exceeded, found 5.')
  })

  it('refuses more aliases than GRAPHQL_MAX_ALIASES', async () => {
    const res = await post({ query: '{ a: vault(id: "v1") { id } b: vault(id: "v1") { id } c: vault(id: "v1") { id } d: vault(id: "v1") { id } }' })
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual([{ message: 'Aliases limit of 3 exceeded, found 4.', extensions: { code: 'bad_request' } }])
  })

  it('refuses a query whose estimated cost exceeds GRAPHQL_MAX_COST (lists count by their `first`)', async () => {
    const cheap = await post({ query: '{ vaults(first: 2) { edges { node { id } } } }' })
    expect(cheap.status).toBe(200)
    const res = await post({ query: '{ vaults(first: 200) { edges { node { id } } } }' })
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual([
      { message: expect.stringMatching(/^Query Cost limit of 300 exceeded, found \d+\.$/), extensions: { code: 'bad_request' } },
    ])
  })

  it('refuses documents with more tokens than GRAPHQL_MAX_TOKENS before validating them', async () => {
    const res = await post({ query: `{ ${'__typename '.repeat(301)}}` })
    expect(res).toEqual({ status: 400, body: { errors: [{ message: 'Syntax Error: Token limit of 300 exceeded.', extensions: { code: 'bad_request' } }] } })
  })

  it('refuses more directives than GRAPHQL_MAX_DIRECTIVES', async () => {
    const res = await post({ query: '{ vault(id: "v1") { id @include(if: true) @skip(if: false) name @include(if: true) } }' })
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual([{ message: 'Directives limit of 2 exceeded, found 3.', extensions: { code: 'bad_request' } }])
  })

  it('hides field and enum suggestions in validation and variable errors', async () => {
    const field = await post({ query: '{ vault(id: "v1") { nme } }' })
    expect(field.body.errors).toEqual([
      { message: 'Cannot query field "nme" on type "Vault".', locations: [{ line: 1, column: 21 }], extensions: { code: 'bad_request' } },
    ])
    const variable = await post({
      query: 'query ($t: CompositionTimeframe) { vault(id: "v1") { compositionSeries(timeframe: $t) { labels } } }',
      variables: { t: 'P7' },
    })
    expect(variable).toEqual({
      status: 400,
      body: {
        errors: [
          {
            message: 'Variable "$t" got invalid value "P7"; Value "P7" does not exist in "CompositionTimeframe" enum.',
            locations: [{ line: 1, column: 8 }],
            extensions: { code: 'bad_request' },
          },
        ],
      },
    })
  })

  it('refuses batched requests (a JSON array of operations)', async () => {
    expect(await post([{ query: '{ __typename }' }, { query: '{ __typename }' }])).toEqual({ status: 400, body: badRequest('Batching is not supported.') })
  })

  it('refuses a body larger than REQUEST_BODY_LIMIT_BYTES, on /graphql and /v1', async () => {
    const big = { query: '{ __typename }', variables: { pad: 'x'.repeat(5000) } }
    expect(await post(big)).toEqual({ status: 400, body: badRequest('The request body is larger than 4096 bytes.') })
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(JSON.stringify(big)))
        controller.close()
      },
    })
    // Without Content-Length the limit is enforced while the body streams in.
    const res = await t.request('/graphql', { method: 'POST', headers: GQL, body: chunked, duplex: 'half' } as RequestInit)
    expect(res.status).toBe(400)
    const rest = await t.request('/v1/vaults', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(big) })
    expect(rest.status).toBe(400)
    expect(await rest.json()).toEqual({
      status: 'error',
      error: { code: 'bad_request', message: 'The request body is larger than 4096 bytes.' },
      server_time_ms: expect.any(Number),
    })
  })

  it('refuses GET and form-encoded operations without a CSRF header, and runs them with one', async () => {
    const url = `/graphql?query=${encodeURIComponent('{ vault(id: "v1") { id } }')}`
    const blind = await t.request(url)
    expect(blind.status).toBe(400)
    expect(await blind.json()).toEqual(
      badRequest('A GET or form-encoded GraphQL request must carry the X-GraphQL-CSRF header (any value); or POST with Content-Type: application/json.'),
    )
    const form = await t.request('/graphql', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ query: '{ __typename }' }) })
    expect(form.status).toBe(400)
    const ok = await t.request(url, { headers: { 'x-graphql-csrf': '1' } })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual(answered({ vault: { id: 'v1' } }))
  })

  it("lets GraphiQL's own introspection query through in development, exempt from depth and cost", async () => {
    const query = getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
    })
    const res = await post({ query }, { 'content-type': 'application/json' })
    expect(res.status).toBe(200)
    expect(res.body.errors).toBeUndefined()
    expect(res.body.data.__schema.queryType).toEqual({ kind: 'OBJECT', name: 'Query' })
  })

  it('still refuses recursive introspection, which the depth and cost limits let through', async () => {
    // types > fields > type > fields > …: exponential in the nesting; graphql-js caps it at 3 levels.
    const res = await post({ query: '{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }' })
    expect(res).toEqual({
      status: 400,
      body: { errors: [{ message: 'Maximum introspection depth exceeded', locations: expect.any(Array), extensions: { code: 'bad_request' } }] },
    })
  })
})

describe(`production mode (${testBackend})`, () => {
  let prod: TestApp
  let prodOpen: TestApp
  beforeAll(async () => {
    prod = await createTestApp({ NODE_ENV: 'production' })
    prodOpen = await createTestApp({ NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'true', GRAPHIQL: 'true' })
  })
  afterAll(async () => {
    await prod.close()
    await prodOpen.close()
  })

  const introspect = (t: TestApp) => t.graphql('{ __schema { queryType { name } } }')
  const graphiql = (t: TestApp) => t.request('/graphql', { headers: { accept: 'text/html' } })

  it('turns introspection and GraphiQL off', async () => {
    expect(await introspect(prod)).toEqual({
      status: 400,
      body: {
        errors: [
          {
            message: 'GraphQL introspection is disabled on this server; the query asks for "__schema".',
            locations: [{ line: 1, column: 3 }],
            extensions: { code: 'bad_request' },
          },
        ],
      },
    })
    const page = await graphiql(prod)
    expect(page.status).toBe(406)
    // Nor is its bundle served (src/http/routes/graphiql.ts).
    expect((await prod.request(`${GRAPHIQL_ASSETS}/graphiql.js`)).status).toBe(404)
    expect(await page.json()).toEqual({
      errors: [
        {
          message: 'Accept application/graphql-response+json or application/json (GraphiQL is turned off on this server).',
          extensions: { code: 'bad_request' },
        },
      ],
    })
    // __typename stays available: clients use it for caching and unions.
    expect((await prod.graphql('{ __typename }')).body).toEqual(answered({ __typename: 'Query' }))
  })

  it('keeps them when GRAPHQL_INTROSPECTION and GRAPHIQL say so', async () => {
    expect((await introspect(prodOpen)).body).toEqual(answered({ __schema: { queryType: { name: 'Query' } } }))
    const page = await graphiql(prodOpen)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    // A boolean, not toContain: a failure must not print the 9 MB page.
    expect(/<title>vaultgate[^<]*<\/title>/.test(await page.text())).toBe(true)
  })
})

// Suggestions reveal schema that introspection may hide: production (and the suite's NODE_ENV=test,
// above) drops them; development, where introspection is on anyway, keeps them for the developer.
describe(`GraphQL field suggestions in development (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ NODE_ENV: 'development' })
    await insertVault(t.db.prisma, 'v1')
  })
  afterAll(() => t.close())

  it('answers "Did you mean" for a mistyped field and enum value', async () => {
    expect(await t.graphql('{ vault(id: "v1") { nam } }')).toEqual({
      status: 400,
      body: {
        errors: [
          {
            message: 'Cannot query field "nam" on type "Vault". Did you mean "name"?',
            locations: [{ line: 1, column: 21 }],
            extensions: { code: 'bad_request' },
          },
        ],
      },
    })
    const variable = await t.graphql('query ($t: CompositionTimeframe) { vault(id: "v1") { compositionSeries(timeframe: $t) { labels } } }', { t: 'P7' })
    expect(variable.body.errors.map((e: { message: string }) => e.message)).toEqual([
      'Variable "$t" got invalid value "P7"; Value "P7" does not exist in "CompositionTimeframe" enum. Did you mean the enum value "P7D"?',
    ])
  })

  it('drops them in production, even with introspection turned on', async () => {
    const prod = await createTestApp({ NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'true' })
    try {
      expect((await prod.graphql('{ vault(id: "v1") { nam } }')).body.errors.map((e: { message: string }) => e.message)).toEqual([
        'Cannot query field "nam" on type "Vault".',
      ])
    } finally {
      await prod.close()
    }
  })
})
