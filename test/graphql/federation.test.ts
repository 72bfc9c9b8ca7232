import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ApolloGateway, IntrospectAndCompose } from '@apollo/gateway'
import { ApolloServer } from '@apollo/server'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { buildSchema, lexicographicSortSchema, parse, printSchema } from 'graphql'
import { createYoga } from 'graphql-yoga'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createHttpServer } from '../../src/server.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { gatewayStorage, startGatewayProcess } from '../support/process.js'
import { recordSql } from '../support/sql.js'
import { vaultDoc } from '../support/wallet-data.js'

// GRAPHQL_FEDERATION (docs/spec/decisions.md §15, docs/graphql-clients.md "Federation"): the
// gateway as an Apollo Federation 2 subgraph, `Vault` an entity keyed by `id`, proved with Apollo's
// own gateway: it reads our `_service { sdl }`, composes it with a second subgraph, plans queries
// across both and fetches our vaults through `_entities`.

const ENTITIES = 'query ($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Vault { id name tvl } } }'

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`
}

/** Representations a router would never send, and what each gets. */
const BAD_REPRESENTATIONS = [
  [[{ __typename: 'Nope', id: 'x' }], 'representations[0]: __typename must name an entity (Vault).'],
  [[{ __typename: 'Vault', id: 'fed-a' }, { id: 'x' }], 'representations[1]: __typename must name an entity (Vault).'],
  [['text'], 'representations[0]: __typename must name an entity (Vault).'],
  [[{ __typename: 'Composition', id: 'x' }], 'representations[0]: __typename must name an entity (Vault).'],
  [[{ __typename: 'toString', id: 'x' }], 'representations[0]: __typename must name an entity (Vault).'],
  [[{ __typename: 'Vault' }], 'representations[0]: id must be a string.'],
  [[{ __typename: 'Vault', id: 5 }], 'representations[0]: id must be a string.'],
] as const

function stop(server: Server) {
  server.closeAllConnections()
  return new Promise((resolve) => server.close(resolve))
}

describe(`GraphQL federation off (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
  })
  afterAll(() => t.close())

  it('leaves the schema as schema.graphql prints it: no _service, no _entities', async () => {
    const service = await t.graphql('{ _service { sdl } }')
    expect(service.status).toBe(400)
    expect(service.body.errors.map((e: { message: string }) => e.message)).toEqual(['Cannot query field "_service" on type "Query".'])
    const entities = await t.graphql(ENTITIES, { r: [] })
    expect(entities.status).toBe(400)
    expect(entities.body.errors[0].message).toBe('Unknown type "_Any".')
  })
})

describe(`bad representations in a gateway process (${testBackend})`, () => {
  const storageEnv = gatewayStorage('vaultgate-federation-log-')

  it('logs no error, no stack and none of the client strings', async () => {
    const gw = await startGatewayProcess({ ...storageEnv(), GRAPHQL_FEDERATION: 'true', SEED_DEMO: 'false', WEBHOOK_WORKER: 'false', LOG_LEVEL: 'debug' })
    try {
      for (const [reps] of BAD_REPRESENTATIONS) {
        const res = await fetch(`${gw.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: ENTITIES, variables: { r: reps } }),
        })
        expect((await res.json()).errors[0].extensions.code).toBe('bad_request')
      }
    } finally {
      expect(await gw.stop()).toBe(0)
    }
    const lines = gw.stdout().split('\n').filter(Boolean)
    expect(lines.filter((l) => l.includes('"route":"/graphql"'))).toHaveLength(BAD_REPRESENTATIONS.length)
    expect(lines.filter((l) => /"level":"(error|fatal)"|Nope|toString|_entities resolver|\bat \//.test(l))).toEqual([])
  })
})

describe(`GraphQL federation on (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ GRAPHQL_FEDERATION: 'true', GRAPHQL_MAX_COST: '200' })
    await importDocument(
      { vaults: [vaultDoc('fed-a', { name: 'Fed A', tvl: '12.5' }), vaultDoc('fed-b', { name: 'Fed B', tvl: '1000000.000001' })] },
      t.db.prisma,
    )
  })
  afterAll(() => t.close())

  it('publishes a Federation 2 SDL: the link, Vault keyed by id, and otherwise the schema of schema.graphql', async () => {
    const { status, body } = await t.graphql('{ _service { sdl } }')
    expect(status).toBe(200)
    const sdl: string = body.data._service.sdl
    expect(sdl).toContain('extend schema\n  @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])')
    expect(sdl).toMatch(/\ntype Vault\s+@key\(fields: "id"\)\s*\{/)
    // The same types and fields as the plain schema once the federation marks are taken out
    // (@apollo/subgraph's printer leaves out @specifiedBy, which the router has no use for).
    const plain = sdl.replace(/extend schema\s+@link\([^)]*\)/, '').replace(/\s*@key\(fields: "id"\)/g, '')
    const expected = readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8').replace(/ @specifiedBy\(url: "[^"]+"\)/g, '')
    expect(printSchema(lexicographicSortSchema(buildSchema(plain)))).toBe(printSchema(lexicographicSortSchema(buildSchema(expected))))
  })

  it('answers _entities in the order asked, null for an unknown id, all vaults in one statement', async () => {
    const reps = [
      { __typename: 'Vault', id: 'fed-b' },
      { __typename: 'Vault', id: 'nope' },
      { __typename: 'Vault', id: 'fed-a' },
    ]
    const { result, statements } = await recordSql(() => t.graphql(ENTITIES, { r: reps }))
    expect(result.status).toBe(200)
    expect(result.body.data).toEqual({
      _entities: [
        { __typename: 'Vault', id: 'fed-b', name: 'Fed B', tvl: '1000000.000001' },
        null,
        { __typename: 'Vault', id: 'fed-a', name: 'Fed A', tvl: '12.5' },
      ],
    })
    // Each representation costs its selection (1 + 3 fields): 3 × 4 = 12 (src/graphql/cost.ts).
    expect(result.body.extensions.cost).toEqual({ requested: 12, limit: 200 })
    expect(statements.filter((s) => /FROM "public"\."vaults"|FROM "vaults"/i.test(s))).toHaveLength(1)
  })

  it('refuses a representation that is not a Vault with a string id: bad_request naming its index, nothing read', async () => {
    for (const [reps, message] of BAD_REPRESENTATIONS) {
      const { result, statements } = await recordSql(() => t.graphql(ENTITIES, { r: reps }))
      expect(result.status).toBe(400)
      expect(result.body).toEqual({
        errors: [{ message, locations: [{ line: 1, column: 24 }], path: ['_entities'], extensions: { code: 'bad_request' } }],
        data: null,
      })
      expect(statements).toEqual([])
    }
  })

  it('prices a batch of representations by its length, so GRAPHQL_MAX_COST bounds it', async () => {
    const reps = Array.from({ length: 51 }, (_, i) => ({ __typename: 'Vault', id: `v${i}` }))
    const { status, body } = await t.graphql(ENTITIES, { r: reps })
    expect(status).toBe(400)
    expect(body.errors).toEqual([{ message: 'Query Cost limit of 200 exceeded, found 204.', extensions: { code: 'bad_request' } }])
  })

  it("composes with another subgraph in Apollo's gateway, which plans across both and fetches vaults through _entities", async () => {
    const server = createHttpServer(t.app)
    const vaultgate = await listen(server)
    // A second team's subgraph: ratings of vaults, keyed by the same id.
    const ratings: Record<string, number> = { 'fed-a': 4, 'fed-b': 5 }
    const ratingsSchema = buildSubgraphSchema({
      typeDefs: parse(`
        extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])
        type Vault @key(fields: "id") { id: ID! rating: Int! }
        type Query { topRated: [Vault!]! }
      `),
      resolvers: {
        Query: { topRated: () => [{ id: 'fed-b' }, { id: 'fed-a' }] },
        Vault: { __resolveReference: (ref: { id: string }) => ({ id: ref.id }), rating: (v: { id: string }) => ratings[v.id] },
      } as never,
    })
    const ratingsServer = createServer(createYoga({ schema: ratingsSchema, logging: false }))
    const ratingsUrl = await listen(ratingsServer)
    const gateway = new ApolloGateway({
      supergraphSdl: new IntrospectAndCompose({
        subgraphs: [
          { name: 'vaultgate', url: vaultgate },
          { name: 'ratings', url: ratingsUrl },
        ],
      }),
    })
    const router = new ApolloServer({ gateway })
    await router.start()
    try {
      const run = async (query: string) => {
        const response = await router.executeOperation({ query })
        if (response.body.kind !== 'single') throw new Error('expected a single result')
        return response.body.singleResult
      }
      // Starts in the ratings subgraph; name and tvl come from vaultgate's _entities.
      expect(await run('{ topRated { id rating name tvl } }')).toEqual({
        data: {
          topRated: [
            { id: 'fed-b', rating: 5, name: 'Fed B', tvl: '1000000.000001' },
            { id: 'fed-a', rating: 4, name: 'Fed A', tvl: '12.5' },
          ],
        },
      })
      // Starts in vaultgate; the rating comes from the other subgraph.
      expect(await run('{ vault(id: "fed-a") { name rating } }')).toEqual({ data: { vault: { name: 'Fed A', rating: 4 } } })
    } finally {
      await router.stop()
      await stop(ratingsServer)
      await stop(server)
    }
  })
})
