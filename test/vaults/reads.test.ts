import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { errorBody, answered } from '../support/bodies.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { vaultDoc } from '../support/wallet-data.js'

// Reads every vault API has (docs/spec/decisions.md §14): a vault by its chain and contract, any
// range and step on both series, performance as of a time, and the basis of each APY.

const HOUR = 3_600_000
const now = new Date('2026-11-21T12:30:00.000Z') // a Saturday

// An EIP-55 test vector (eips.ethereum.org/EIPS/eip-55): the lowercase address and its checksum.
const CONTRACT = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'
const CHECKSUMMED = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'

const snap = (as_of: string, share_price: string, vault_id = 'ranged') => ({ vault_id, as_of, share_price, tvl: '1000', base_asset_price_usd: '1' })
const pos = (platform: string, pct: number) => ({ platform, asset: 'USD Coin', symbol: 'USDC', pct, apy_est_pct: 4, icon: 'https://icons.test/usdc.svg' })
const composition = (as_of: string, positions: ReturnType<typeof pos>[], vault_id = 'ranged') => ({ vault_id, as_of, positions })

// "ranged": snapshots inside buckets, on a boundary (10:00), and after now (12:45).
const SNAPSHOTS = [
  snap('2026-11-20T09:15:00.000Z', '1.01'),
  snap('2026-11-20T10:00:00.000Z', '1.02'),
  snap('2026-11-20T13:40:00.000Z', '1.03'),
  snap('2026-11-21T12:10:00.000Z', '1.04'),
  snap('2026-11-21T12:45:00.000Z', '1.05'),
]
const COMPOSITIONS = [
  composition('2026-11-20T09:15:00.000Z', [pos('Aave', 100)]),
  composition('2026-11-20T10:00:00.000Z', [pos('Aave', 60), pos('Morpho', 40)]),
  composition('2026-11-20T13:40:00.000Z', [pos('Aave', 50), pos('Morpho', 50)]),
  composition('2026-11-21T12:10:00.000Z', [pos('Aave', 30), pos('Morpho', 70)]),
  composition('2026-11-21T12:45:00.000Z', [pos('Morpho', 100)]),
]
// "long": one snapshot at the start of a 1,000-hour range, carried through every bucket.
const LONG_FROM = '2026-10-01T00:00:00.000Z'

/** `n` consecutive series points from `from`, `step` apart, all alike. */
const run = (from: string, n: number, step: number, point: object) =>
  Array.from({ length: n }, (_, i) => ({ t: new Date(Date.parse(from) + i * step).toISOString(), ...point }))

const price = (t: string, share_price: string) => ({ t, share_price, tvl: '1000', tvl_usd: '1000', apy_7d_pct: null })

describe(`reads every vault API has (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => now })
    await importDocument(
      {
        vaults: [
          vaultDoc('ranged', { share_price: '1.04', tvl: '1000', chain_id: '8453', contract: { address: CHECKSUMMED } }),
          vaultDoc('long', { share_price: '1', tvl: '1000' }),
          vaultDoc('offchain', { chain_id: null, contract: { address: CONTRACT } }),
        ],
        vault_snapshots: [...SNAPSHOTS, snap(LONG_FROM, '1', 'long')],
        compositions: COMPOSITIONS,
      },
      t.db.prisma,
      { clock: () => new Date('2026-11-21T12:10:00.000Z') },
    )
  })
  afterAll(() => t.close())

  const get = async (path: string) => {
    const res = await t.request(path)
    return { status: res.status, body: await res.json() }
  }

  describe('a vault by chain and contract', () => {
    it('answers the get_vault body for a decimal or CAIP-2 chain and an address in any case', async () => {
      const byId = await get('/v1/vaults/ranged')
      expect(byId.status).toBe(200)
      for (const path of [
        `/v1/chains/8453/vaults/${CONTRACT}`,
        `/v1/chains/eip155:8453/vaults/${CHECKSUMMED}`,
        `/v1/chains/8453/vaults/${CONTRACT.toUpperCase().replace('0X', '0x')}`,
      ])
        expect(await get(path)).toEqual(byId)
    })

    it('answers 404 when no vault has that chain and contract, and 400 naming a malformed chain or address', async () => {
      const notFound = errorBody('not_found', 'No vault on chain 1 has this contract address.')
      expect(await get(`/v1/chains/1/vaults/${CONTRACT}`)).toEqual({ status: 404, body: notFound }) // "offchain" has no chain id
      const chain = errorBody('bad_request', 'chain must be a chain id: decimal (8453) or CAIP-2 (eip155:8453).')
      for (const bad of ['base', 'eip155:', 'eip155:0x2105', 'cosmos:8453', '08453', '-1'])
        expect(await get(`/v1/chains/${bad}/vaults/${CONTRACT}`), bad).toEqual({ status: 400, body: chain })
      const address = errorBody('bad_request', 'address must be an EVM address: 0x followed by 40 hex digits.')
      for (const bad of ['0x1234', `${CONTRACT}00`, CONTRACT.slice(2), `0x${'g'.repeat(40)}`])
        expect(await get(`/v1/chains/8453/vaults/${bad}`), bad).toEqual({ status: 400, body: address })
    })

    it('GraphQL vaultByAddress reads chainId the same way; caip10 carries the EIP-55 checksum, null without a chain id', async () => {
      const query = `query($c: String!, $a: String!) { vaultByAddress(chainId: $c, address: $a) { id chainId caip10 contract { address } } }`
      const ranged = answered({ vaultByAddress: { id: 'ranged', chainId: '8453', caip10: `eip155:8453:${CHECKSUMMED}`, contract: { address: CHECKSUMMED } } })
      expect((await t.graphql(query, { c: 'eip155:8453', a: CONTRACT })).body).toEqual(ranged)
      expect((await t.graphql(query, { c: '8453', a: CONTRACT.toUpperCase().replace('0X', '0x') })).body).toEqual(ranged)
      expect((await t.graphql(query, { c: '10', a: CONTRACT })).body).toEqual(answered({ vaultByAddress: null }))
      const bad = (await t.graphql(query, { c: 'base', a: CONTRACT })).body
      expect(bad.errors[0]).toMatchObject({
        message: 'chainId must be a chain id: decimal (8453) or CAIP-2 (eip155:8453).',
        extensions: { code: 'bad_request' },
      })
      expect((await t.graphql('{ vault(id: "offchain") { caip10 } }')).body).toEqual(answered({ vault: { caip10: null } }))
    })

    it('costs one SQL statement: one probe of the (chain_id, lower(address)) index', async () => {
      const { result, statements } = await recordSql(() => t.graphql(`{ vaultByAddress(chainId: "8453", address: "${CHECKSUMMED}") { id name caip10 } }`))
      expect(result.body).toEqual(answered({ vaultByAddress: { id: 'ranged', name: 'Vault ranged', caip10: `eip155:8453:${CHECKSUMMED}` } }))
      expect(statements).toHaveLength(1)
      expect(statements[0]).toMatch(/WHERE chain_id = \$1 AND lower\(contract_address\) = \$2$/)
      const [index] = await t.db.prisma.$queryRawUnsafe<{ indexdef: string }[]>(
        `SELECT indexdef FROM pg_indexes WHERE indexname = 'vaults_chain_id_contract_address_key'`,
      )
      expect(index!.indexdef).toMatch(
        /^CREATE UNIQUE INDEX .* ON public\.vaults USING btree \(chain_id, lower\(contract_address\)\) WHERE \(chain_id IS NOT NULL\)$/,
      )
    })

    it('an import that would give two vaults one chain and contract is refused whole, naming the path', async () => {
      const before = await t.db.prisma.vault.count()
      const other = CONTRACT.replace('5a', '6b')
      // Within the document (the address in another case is the same contract).
      await expect(
        importDocument(
          {
            vaults: [
              vaultDoc('new-1', { chain_id: '10', contract: { address: other } }),
              vaultDoc('new-2', { chain_id: '10', contract: { address: other.toUpperCase().replace('0X', '0x') } }),
            ],
          },
          t.db.prisma,
        ),
      ).rejects.toMatchObject({
        code: 'bad_request',
        message: 'vaults[1].contract.address: duplicate contract on chain 10 (first at vaults[0]); a chain and contract address belong to one vault',
      })
      // Against a stored vault.
      await expect(
        importDocument({ vaults: [vaultDoc('new-3'), vaultDoc('new-4', { chain_id: '8453', contract: { address: CONTRACT } })] }, t.db.prisma),
      ).rejects.toMatchObject({
        code: 'bad_request',
        message: 'vaults[1].contract.address: vault "ranged" already has this contract on chain 8453; a chain and contract address belong to one vault',
      })
      expect(await t.db.prisma.vault.count()).toBe(before) // nothing written
      // Not a clash: another chain, no chain id, or the vault itself re-imported.
      const clock = { clock: () => new Date('2026-11-21T12:10:00.000Z') }
      await importDocument(
        {
          vaults: [
            vaultDoc('new-5', { chain_id: '10', contract: { address: CONTRACT } }),
            vaultDoc('new-6', { chain_id: null, contract: { address: CONTRACT } }),
          ],
        },
        t.db.prisma,
        clock,
      )
      const ranged = (address: string) => vaultDoc('ranged', { share_price: '1.04', tvl: '1000', chain_id: '8453', contract: { address } })
      await importDocument({ vaults: [ranged(CONTRACT)] }, t.db.prisma, clock)
      expect((await get(`/v1/chains/8453/vaults/${CHECKSUMMED}`)).body.contract).toEqual({ address: CONTRACT })
      await importDocument({ vaults: [ranged(CHECKSUMMED)] }, t.db.prisma, clock)
      await t.db.prisma.vault.deleteMany({ where: { id: { in: ['new-5', 'new-6'] } } })
    })
  })

  describe('any range, any step', () => {
    it('the first point is the bucket holding from (carrying a snapshot taken before it); the last is the bucket holding to, cut at to', async () => {
      const q = 'from=2026-11-20T09:30:00.000Z&to=2026-11-20T13:20:00.000Z&interval=1h'
      const echo = { timeframe: null, from: '2026-11-20T09:30:00.000Z', to: '2026-11-20T13:20:00.000Z', interval: '1h' }
      expect(await get(`/v1/vaults/ranged/performance/series?${q}`)).toEqual({
        status: 200,
        body: {
          ...echo,
          points: [
            price('2026-11-20T09:00:00.000Z', '1.01'), // taken at 09:15, before from
            price('2026-11-20T10:00:00.000Z', '1.02'), // on the boundary: the bucket it opens
            price('2026-11-20T11:00:00.000Z', '1.02'),
            price('2026-11-20T12:00:00.000Z', '1.02'),
            price('2026-11-20T13:00:00.000Z', '1.02'), // 13:40 is after to
          ],
        },
      })
      expect(await get(`/v1/vaults/ranged/composition/series?${q}`)).toEqual({
        status: 200,
        body: {
          group_by: 'platform',
          ...echo,
          labels: ['Aave', 'Morpho'],
          points: [{ t: '2026-11-20T09:00:00.000Z', weights_pct: [100, 0] }, ...run('2026-11-20T10:00:00.000Z', 4, HOUR, { weights_pct: [60, 40] })],
        },
      })
    })

    it('leaves out buckets without a snapshot and buckets starting after now (to defaults to now)', async () => {
      expect((await get('/v1/vaults/ranged/performance/series?from=2026-11-20T05:00:00.000Z&to=2026-11-20T11:00:00.000Z&interval=1h')).body).toEqual({
        timeframe: null,
        from: '2026-11-20T05:00:00.000Z',
        to: '2026-11-20T11:00:00.000Z',
        interval: '1h',
        points: [price('2026-11-20T09:00:00.000Z', '1.01'), price('2026-11-20T10:00:00.000Z', '1.02')],
      })
      const future = { timeframe: null, from: '2026-11-21T10:00:00.000Z', to: '2026-11-21T15:00:00.000Z', interval: '1h' }
      const points = [price('2026-11-21T10:00:00.000Z', '1.03'), price('2026-11-21T11:00:00.000Z', '1.03'), price('2026-11-21T12:00:00.000Z', '1.04')] // 12:45 is after now
      expect((await get('/v1/vaults/ranged/performance/series?from=2026-11-21T10:00:00.000Z&to=2026-11-21T15:00:00.000Z&interval=1h')).body).toEqual({
        ...future,
        points,
      })
      // Without to and interval: to is now, the step the smallest giving at most 1,000 points.
      expect((await get('/v1/vaults/ranged/performance/series?from=2026-11-21T10:00:00.000Z')).body).toEqual({ ...future, to: now.toISOString(), points })
      const far = (await get('/v1/vaults/ranged/performance/series?from=2026-09-01T00:00:00.000Z')).body // 81 days: 1,957 hours, 326 6-hour buckets
      expect({ interval: far.interval, first: far.points[0].t, count: far.points.length }).toEqual({
        interval: '6h',
        first: '2026-11-20T06:00:00.000Z',
        count: 6,
      })
      expect((await get('/v1/vaults/ranged/composition/series?from=2026-11-21T10:00:00.000Z&group_by=asset')).body).toEqual({
        group_by: 'asset',
        ...future,
        to: now.toISOString(),
        labels: ['USD Coin'],
        points: run('2026-11-21T10:00:00.000Z', 3, HOUR, { weights_pct: [100] }),
      })
    })

    it('answers at most 1,000 points: 1,000 buckets are served, 1,001 refused', async () => {
      const to = new Date(Date.parse(LONG_FROM) + 1000 * HOUR).toISOString()
      expect(await get(`/v1/vaults/long/performance/series?from=${LONG_FROM}&to=${to}&interval=1h`)).toEqual({
        status: 200,
        body: {
          timeframe: null,
          from: LONG_FROM,
          to,
          interval: '1h',
          points: run(LONG_FROM, 1000, HOUR, { share_price: '1', tvl: '1000', tvl_usd: '1000', apy_7d_pct: null }),
        },
      })
      const over = new Date(Date.parse(to) + 1).toISOString()
      const refused = errorBody(
        'bad_request',
        'interval 1h gives 1001 points between from and min(to, now); at most 1000 are allowed: choose a larger interval or a shorter range.',
      )
      expect(await get(`/v1/vaults/long/performance/series?from=${LONG_FROM}&to=${over}&interval=1h`)).toEqual({ status: 400, body: refused })
      expect(await get(`/v1/vaults/long/composition/series?from=${LONG_FROM}&to=${over}&interval=1h`)).toEqual({ status: 400, body: refused })
      // The count runs to now when to is later.
      expect((await get(`/v1/vaults/long/performance/series?from=${LONG_FROM}&to=2030-01-01T00:00:00.000Z&interval=1d`)).body.points).toHaveLength(52)
    })

    it('refuses every bad input with 400 naming the parameter, on both series', async () => {
      const cases: [string, string][] = [
        ['from=2026-11-20T10:00:00.000Z&to=2026-11-20T10:00:00.000Z', 'from must be earlier than to (2026-11-20T10:00:00.000Z).'],
        ['from=2026-11-22T10:00:00.000Z', 'from must be earlier than to (now, 2026-11-21T12:30:00.000Z).'],
        ['timeframe=7d&from=2026-11-20T10:00:00.000Z', 'timeframe must not be given together with from: a range has its own from, to and interval.'],
        ['to=2026-11-20T10:00:00.000Z', 'from is required when to is given.'],
        ['interval=1h', 'from is required when interval is given.'],
        ['from=2026-11-20T10:00:00.000Z&interval=2h', 'interval must be one of "1h", "6h", "1d", "1w".'],
        ['from=yesterday', 'from must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z".'],
        ['from=2026-02-30T00:00:00.000Z', 'from must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z".'],
        ['from=2026-11-20T10:00:00.000Z&to=2026-11-20', 'to must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z".'],
        ['from=1990-01-01T00:00:00.000Z', 'from is too far back: even interval 1w gives more than 1000 points up to 2026-11-21T12:30:00.000Z.'],
      ]
      for (const route of ['performance/series', 'composition/series'])
        for (const [q, message] of cases)
          expect(await get(`/v1/vaults/ranged/${route}?${q}`), `${route}?${q}`).toEqual({ status: 400, body: errorBody('bad_request', message) })
      expect(await get('/v1/vaults/nope/performance/series?from=2026-11-20T10:00:00.000Z')).toEqual({
        status: 404,
        body: errorBody('not_found', 'Vault "nope" was not found.'),
      })
    })

    it('GraphQL range: the same points and echo; with timeframe, or a bad range, a bad_request error', async () => {
      const { body } = await t.graphql(`{ vault(id: "ranged") {
        performanceSeries(range: { from: "2026-11-20T09:30:00.000Z", to: "2026-11-20T13:20:00.000Z", interval: PT1H }) { timeframe from to interval points { t sharePrice } }
        compositionSeries(range: { from: "2026-11-21T10:00:00.000Z" }) { timeframe from to interval labels points { t weightsPct } }
        week: performanceSeries(timeframe: P7D) { timeframe from to interval }
      } }`)
      expect(body).toEqual(
        answered({
          vault: {
            performanceSeries: {
              timeframe: null,
              from: '2026-11-20T09:30:00.000Z',
              to: '2026-11-20T13:20:00.000Z',
              interval: 'PT1H',
              points: [{ t: '2026-11-20T09:00:00.000Z', sharePrice: '1.01' }, ...run('2026-11-20T10:00:00.000Z', 4, HOUR, { sharePrice: '1.02' })],
            },
            compositionSeries: {
              timeframe: null,
              from: '2026-11-21T10:00:00.000Z',
              to: '2026-11-21T12:30:00.000Z',
              interval: 'PT1H',
              labels: ['Morpho', 'Aave'],
              points: [...run('2026-11-21T10:00:00.000Z', 2, HOUR, { weightsPct: [50, 50] }), { t: '2026-11-21T12:00:00.000Z', weightsPct: [70, 30] }],
            },
            week: { timeframe: 'P7D', from: null, to: null, interval: null },
          },
        }),
      )
      const error = async (args: string) => (await t.graphql(`{ vault(id: "ranged") { performanceSeries(${args}) { points { t } } } }`)).body.errors[0]
      expect(await error('timeframe: P7D, range: { from: "2026-11-20T10:00:00.000Z" }')).toMatchObject({
        message: 'timeframe must not be given together with range: a range has its own from, to and interval.',
        extensions: { code: 'bad_request' },
      })
      expect(await error('range: { from: "2026-11-20T10:00:00.000Z", to: "2026-11-20T09:00:00.000Z" }')).toMatchObject({
        message: 'from must be earlier than to (2026-11-20T09:00:00.000Z).',
        extensions: { code: 'bad_request' },
      })
      expect(await error('range: { from: "2026-10-01T00:00:00.000Z", to: "2026-11-11T16:00:00.001Z", interval: PT1H }')).toMatchObject({
        extensions: { code: 'bad_request' },
      })
      expect(await error('range: { from: "soon" }')).toMatchObject({ extensions: { code: 'bad_request' } })
      expect(await error('range: { from: "2026-11-20T10:00:00.000Z", interval: PT2H }')).toMatchObject({ extensions: { code: 'bad_request' } })
    })

    it('a range series is one SQL statement, as a timeframe is', async () => {
      for (const route of ['performance/series', 'composition/series']) {
        const { statements } = await recordSql(() => t.request(`/v1/vaults/long/${route}?from=${LONG_FROM}&interval=1h&to=2026-11-11T16:00:00.000Z`))
        expect(statements, route).toHaveLength(2) // the vault, then its series
        expect(statements[1]).toMatch(/generate_series/)
      }
    })
  })

  describe('performance as of a time, and the basis of each APY', () => {
    it('?at= computes with s1 the newest snapshot at or before it; before the first, every value is null', async () => {
      expect(await get('/v1/vaults/ranged/performance?at=2026-11-20T13:00:00.000Z')).toEqual({
        status: 200,
        body: {
          vault_id: 'ranged',
          as_of: '2026-11-20T10:00:00.000Z',
          share_price: '1.02',
          tvl: '1000',
          tvl_usd: '1000',
          apy_pct: { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null },
          apy_basis: { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null },
        },
      })
      const empty = (await get('/v1/vaults/ranged/performance?at=2026-11-20T09:00:00.000Z')).body
      expect(empty).toEqual({
        vault_id: 'ranged',
        as_of: null,
        share_price: null,
        tvl: null,
        tvl_usd: null,
        apy_pct: { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null },
        apy_basis: { '1d': null, '7d': null, '30d': null, '90d': null, '1y': null, inception: null },
      })
      // A time after now reads as now (the snapshot at 12:45 stays unseen).
      expect((await get('/v1/vaults/ranged/performance?at=2027-01-01T00:00:00.000Z')).body).toEqual((await get('/v1/vaults/ranged/performance')).body)
      expect(await get('/v1/vaults/ranged/performance?at=noon')).toEqual({
        status: 400,
        body: errorBody('bad_request', 'at must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z".'),
      })
    })

    it('apy_basis gives apy_pct back by the formula of §9 (REST), and GraphQL basis lists the same', async () => {
      const perf = (await get('/v1/vaults/ranged/performance')).body
      expect(perf).toEqual({
        vault_id: 'ranged',
        as_of: '2026-11-21T12:10:00.000Z',
        share_price: '1.04',
        tvl: '1000',
        tvl_usd: '1000',
        // Python's decimal module at 60 digits: ((p1 / p0) ** (365 days / (t1 − t0)) − 1) × 100, rounded half up to 6 decimals.
        // 1d: 1.02 → 1.04 over 26 h 10 min (the newest snapshot at or before a day back); inception: 1.01 → 1.04 over 26 h 55 min.
        apy_pct: { '1d': 66_462.729015, '7d': null, '30d': null, '90d': null, '1y': null, inception: 1_371_082.944574 },
        apy_basis: {
          '1d': { from: '2026-11-20T10:00:00.000Z', to: '2026-11-21T12:10:00.000Z', share_price_from: '1.02', share_price_to: '1.04' },
          '7d': null,
          '30d': null,
          '90d': null,
          '1y': null,
          inception: { from: '2026-11-20T09:15:00.000Z', to: '2026-11-21T12:10:00.000Z', share_price_from: '1.01', share_price_to: '1.04' },
        },
      })
      const { body } = await t.graphql('{ vault(id: "ranged") { performance { apy1d basis { window from to sharePriceFrom sharePriceTo } } } }')
      expect(body.data.vault.performance).toEqual({
        apy1d: perf.apy_pct['1d'],
        basis: [
          { window: 'P1D', from: '2026-11-20T10:00:00.000Z', to: '2026-11-21T12:10:00.000Z', sharePriceFrom: '1.02', sharePriceTo: '1.04' },
          { window: 'INCEPTION', from: '2026-11-20T09:15:00.000Z', to: '2026-11-21T12:10:00.000Z', sharePriceFrom: '1.01', sharePriceTo: '1.04' },
        ],
      })
    })
  })
})
