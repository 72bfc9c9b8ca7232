import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { longClientValues, nastyJson, nastyString, runs, violation } from '../support/fuzz.js'
import { Tally } from '../support/report.js'

const WALLET = '0x00000000000000000000000000000000000000b1'

/** GraphQL-over-HTTP answers: 200, 400 for a request that cannot run, and the HTTP status of a typed error. */
const DOCUMENTED = [200, 400, 404, 406]

/** Operations with every argument as a variable; the variables' values are then anything at all. */
const operations: { query: string; vars: string[] }[] = [
  {
    query: 'query($id: ID!) { vault(id: $id) { id name tvl sharePrice status inceptionDate composition { asOf positions { platform pct apyEstPct } } } }',
    vars: ['id'],
  },
  {
    query:
      'query($first: Int, $last: Int, $after: String, $before: String, $chain: String, $status: VaultStatus) { vaults(first: $first, last: $last, after: $after, before: $before, chain: $chain, status: $status) { edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage endCursor } } }',
    vars: ['first', 'last', 'after', 'before', 'chain', 'status'],
  },
  {
    query:
      'query($id: ID!, $t: CompositionTimeframe!, $g: CompositionGroupBy!) { vault(id: $id) { compositionSeries(timeframe: $t, groupBy: $g) { labels points { t weightsPct } } composition(groupBy: $g) { asOf } } }',
    vars: ['id', 't', 'g'],
  },
  {
    query:
      'query($a: String!, $v: ID!, $type: TransactionType, $first: Int, $after: String) { user(address: $a) { address transactions(vaultId: $v, type: $type, first: $first, after: $after) { edges { cursor node { id type amount timestamp } } pageInfo { hasNextPage endCursor } } } }',
    vars: ['a', 'v', 'type', 'first', 'after'],
  },
  {
    query:
      'query($a: String!, $v: ID!) { user(address: $a) { pendingRedeems { totalPending averageRedeemDelay pendingRedeems { vaultId amount } } position(vaultId: $v) { shareBalance positionValueUsd } } }',
    vars: ['a', 'v'],
  },
]

/** Values that reach the resolvers (a real id, a valid enum), mixed with anything JSON can hold. */
const value = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'v1',
      'v2',
      WALLET,
      WALLET.toUpperCase().replace('0X', '0x'),
      'P7D',
      'ALL',
      'platform',
      'asset',
      'deposit',
      'redeem',
      'active',
      1,
      50,
      200,
      201,
      0,
      -1,
    ),
  },
  { weight: 3, arbitrary: nastyJson },
)

const withVariables = fc.record({
  op: fc.constantFrom(...operations),
  values: fc.array(fc.option(value, { nil: undefined }), { minLength: 6, maxLength: 6 }),
})

/** The same operations with the values written into the document as literals (JSON strings and numbers are GraphQL literals). */
// Objects are written as their JSON text: String() throws on objects without a prototype (fast-check makes them).
const text = (v: unknown) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))
const literal = (v: unknown) =>
  typeof v === 'number' && Number.isFinite(v) ? String(v) : typeof v === 'string' && /^[A-Z_][A-Z0-9_]*$/.test(v) ? v : JSON.stringify(text(v))
const inline = withVariables.map(({ op, values }) => {
  let i = 0
  return { query: op.query.replace(/^query\([^)]*\)/, 'query').replace(/\$\w+/g, () => literal(values[i++ % values.length] ?? 'v1')) }
})

/** Whole request bodies that are not what a client should send. */
const oddBodies = fc.oneof(
  fc.record({ query: nastyString }, { requiredKeys: [] }),
  fc.record({
    query: fc.constantFrom(
      '{ vault(id: "v1") { id } }',
      'mutation { x }',
      'subscription { x }',
      '{ __schema { types { name } } }',
      'query A { __typename } query B { __typename }',
    ),
    operationName: fc.option(nastyString),
    variables: nastyJson,
    extensions: nastyJson,
  }),
  fc.record({
    query: fc.constantFrom(
      '{ vault(id: "v1") { id ...F } } fragment F on Vault { ...F }',
      '{ vault(id: "v1") { id @skip } }',
      `{ ${'vault(id: "v1") { id } '.repeat(3)} }`,
      '{ vault(id: 1.5) { id } }',
      '{ vault(id: "\\u0000") { id } }',
    ),
  }),
  nastyJson.map((v) => ({ query: v })),
)

describe(`GraphQL under random input (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PUBLIC_PER_MINUTE: '0' })
    await insertVault(t.db.prisma, 'v1')
    await insertVault(t.db.prisma, 'v2', { status: 'paused' })
    await importDocument(
      {
        compositions: [
          {
            vault_id: 'v1',
            as_of: '2026-01-01T00:00:00.000Z',
            positions: [{ platform: 'Aave', asset: 'USD Coin', symbol: 'USDC', pct: 100, apy_est_pct: 4, icon: 'https://icons.test/usdc.svg' }],
          },
        ],
        transactions: [
          {
            id: 't1',
            vault_id: 'v1',
            address: WALLET,
            type: 'deposit',
            status: 'completed',
            amount: '100',
            shares: '99',
            timestamp: '2026-01-02T00:00:00.000Z',
            completed_at: '2026-01-02T00:01:00.000Z',
            tx_hash: `0x${'1'.repeat(64)}`,
          },
          {
            id: 't2',
            vault_id: 'v1',
            address: WALLET,
            type: 'redeem',
            status: 'pending',
            amount: '5',
            shares: '5',
            timestamp: '2026-01-03T00:00:00.000Z',
            completed_at: null,
            tx_hash: `0x${'2'.repeat(64)}`,
          },
        ],
      },
      t.db.prisma,
    )
  })
  afterAll(() => t.close())

  const send = async (body: unknown, tally: Tally, accept: string) => {
    const res = await t.request('/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify(body) })
    const copy = res.clone()
    const errors = ((await copy.json().catch(() => ({}))) as { errors?: { extensions?: { code?: string } }[] }).errors
    tally.add(res.status, errors?.[0]?.extensions?.code)
    return res
  }

  const accept = fc.constantFrom('application/graphql-response+json', 'application/json', '*/*')

  it('answers arguments of any type and size with data or coded errors, never internal or a stack', async () => {
    const tally = new Tally('GraphQL fuzz (variables and literals)')
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          withVariables.map(({ op, values }) => ({ query: op.query, variables: Object.fromEntries(op.vars.map((name, i) => [name, values[i]])) })),
          inline,
        ),
        accept,
        async (body, acc) => {
          const res = await send(body, tally, acc)
          expect(
            await violation(res, { graphql: true, method: 'POST', allowed: DOCUMENTED, sent: longClientValues(body) }),
            JSON.stringify(body).slice(0, 500),
          ).toBeUndefined()
        },
      ),
      runs(300),
    )
    tally.print()
    expect(tally.byStatus.get('200')).toBeGreaterThan(0)
    expect([...tally.byStatus.keys()].some((k) => k.endsWith('bad_request'))).toBe(true)
  })

  it('answers malformed requests with bad_request', async () => {
    const tally = new Tally('GraphQL fuzz (malformed requests)')
    await fc.assert(
      fc.asyncProperty(oddBodies, accept, async (body, acc) => {
        const res = await send(body, tally, acc)
        expect(
          await violation(res, { graphql: true, method: 'POST', allowed: DOCUMENTED, sent: longClientValues(body) }),
          JSON.stringify(body).slice(0, 500),
        ).toBeUndefined()
      }),
      runs(200),
    )
    tally.print()
  })

  it('refuses expensive documents whose size is in their variables (aliased series under a page of $first) with coded errors, and answers the cheap ones', async () => {
    const tally = new Tally('GraphQL fuzz (expensive variable-sized documents)')
    const expensive = fc.record({
      aliases: fc.integer({ min: 1, max: 15 }),
      first: fc.oneof(fc.integer({ min: -5, max: 500 }), fc.constantFrom(null, undefined, '50', 1e9, 2 ** 31)),
      timeframe: fc.constantFrom('P1D', 'P7D', 'P30D', 'P1Y', 'ALL', 'nope', undefined),
      groupBy: fc.constantFrom('platform', 'asset', undefined),
      asVariable: fc.boolean(),
    })
    await fc.assert(
      fc.asyncProperty(expensive, accept, async ({ aliases, first, timeframe, groupBy, asVariable }, acc) => {
        const series = Array.from(
          { length: aliases },
          (_, i) =>
            `s${i}: compositionSeries(timeframe: ${asVariable ? '$t' : (timeframe ?? 'P7D')}${groupBy ? `, groupBy: ${groupBy}` : ''}) { labels points { t weightsPct } }`,
        ).join(' ')
        const body = {
          query: `query Costly($first: Int${asVariable ? ', $t: CompositionTimeframe!' : ''}) { vaults(first: $first) { edges { node { id ${series} } } } }`,
          variables: { first, ...(asVariable ? { t: timeframe } : {}) },
        }
        const res = await send(body, tally, acc)
        expect(
          await violation(res.clone(), { graphql: true, method: 'POST', allowed: DOCUMENTED, sent: longClientValues(body) }),
          JSON.stringify(body).slice(0, 500),
        ).toBeUndefined()
        const answer = (await res.json()) as { errors?: { message: string; extensions: { code: string } }[] }
        // A page of more than 100 vaults with a year of series under each cannot be within the cost limit.
        if (typeof first === 'number' && first > 100 && aliases >= 5 && timeframe === 'P1Y' && !answer.errors?.some((e) => /first|timeframe/i.test(e.message)))
          expect(answer.errors?.[0]).toMatchObject({ message: expect.stringMatching(/^Query Cost limit of \d+ exceeded/), extensions: { code: 'bad_request' } })
      }),
      runs(150),
    )
    tally.print()
    expect([...tally.byStatus.keys()].some((k) => k.endsWith('bad_request'))).toBe(true)
  })
})
