import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { nastyJson, nastyString, runs, violation } from '../support/fuzz.js'
import { classify, Tally } from '../support/report.js'

const ADMIN_TOKEN = 'fuzz-admin-token-0123456789-0123456789abcdef'
const WALLET = '0x00000000000000000000000000000000000000b1'

/** A valid document: each run changes one of its values, or throws it away for random JSON. */
const valid = () => ({
  vaults: [
    {
      id: 'fz1',
      name: 'Fuzz Vault',
      chain: 'ethereum',
      chain_id: '1',
      symbol: 'vFZ',
      base_asset: 'USDC',
      base_asset_price_usd: '1',
      status: 'active',
      tvl: '1000.5',
      share_price: '1.01',
      perf_fee_bps: 1000,
      mgmt_fee_bps: 100,
      contract: { address: '0x1111111111111111111111111111111111111111' },
      deposit_constraints: { max_deposit: '1000000', min_deposit: '10', paused: false },
      withdraw_constraints: { instant_liquidity: true, instant_slippage_max_bps: 30, redeem_24h_threshold_pct_of_aum: 10, redeem_48h_above_threshold: true },
      icons: { dark: 'https://x.example/d.svg', light: 'https://x.example/l.svg' },
      api_endpoint: 'https://x.example/api/fz1',
      description: 'Fuzzed.',
      docs_url: 'https://x.example/docs',
      inception_date: '2025-11-20',
      strategy_brief: 'None.',
    },
  ],
  compositions: [
    {
      vault_id: 'fz1',
      as_of: '2026-01-01T00:00:00.000Z',
      positions: [{ platform: 'Aave', asset: 'USD Coin', symbol: 'USDC', pct: 100, apy_est_pct: 4, icon: 'https://icons.test/usdc.svg' }],
    },
  ],
  vault_snapshots: [{ vault_id: 'fz1', as_of: '2026-01-01T00:00:00.000Z', share_price: '1', tvl: '900', base_asset_price_usd: '1' }],
  transactions: [
    {
      id: 'ft1',
      vault_id: 'fz1',
      address: WALLET,
      type: 'deposit',
      status: 'completed',
      amount: '100',
      shares: '99',
      timestamp: '2026-01-02T00:00:00.000Z',
      completed_at: '2026-01-02T00:01:00.000Z',
      tx_hash: `0x${'1'.repeat(64)}`,
    },
  ],
})

/** Every path to a leaf (or a container) of a JSON value. */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix]
  if (Array.isArray(value))
    value.forEach((v, i) => {
      out.push(...paths(v, [...prefix, i]))
    })
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]))
  return out
}
const PATHS = paths(valid()).filter((p) => p.length > 0)

function setAt(doc: any, path: (string | number)[], v: unknown) {
  let node = doc
  for (const key of path.slice(0, -1)) node = node[key]
  const last = path[path.length - 1]!
  if (v === undefined) delete node[last]
  else node[last] = v
}

/** Amounts, dates, addresses and ids at and past their limits. */
const edgeValue = fc.oneof(
  fc.constantFrom(
    `1${'0'.repeat(60)}`,
    `${'9'.repeat(60)}.${'9'.repeat(18)}`,
    `0.${'0'.repeat(18)}1`,
    '-1',
    '-0',
    '1e5',
    '0x10',
    ' 1',
    'Infinity',
    '2026-02-30T00:00:00Z',
    '2026-01-01',
    '10000-01-01T00:00:00Z',
    '1969-12-31T23:59:59.999Z',
    '0xZZ00000000000000000000000000000000000000',
    'a\u0000b',
    '',
    101,
    -0.5,
    1e21,
    2 ** 31,
    NaN,
    [],
    {},
  ),
  nastyString,
  nastyJson,
)

const mutated = fc.array(fc.tuple(fc.constantFrom(...PATHS), fc.option(edgeValue, { nil: undefined })), { minLength: 1, maxLength: 3 }).map((edits) => {
  const doc = valid()
  for (const [path, v] of edits) {
    try {
      setAt(doc, path, v)
    } catch {
      // an earlier edit removed the parent: nothing to change
    }
  }
  return JSON.stringify(doc)
})

const body = fc.oneof(
  { weight: 4, arbitrary: mutated },
  { weight: 1, arbitrary: nastyJson.map((v) => JSON.stringify(v) ?? '') },
  {
    weight: 1,
    arbitrary: fc
      .record({ vaults: nastyJson, compositions: nastyJson, vault_snapshots: nastyJson, transactions: nastyJson }, { requiredKeys: [] })
      .map((v) => JSON.stringify(v)),
  },
  { weight: 1, arbitrary: fc.oneof(nastyString, fc.constantFrom('{', '{"vaults":[', '\u0000', 'null')) },
)

describe(`the import document under random input (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ ADMIN_TOKEN })
  })
  afterAll(() => t.close())

  const post = (b: string) =>
    t.request('/admin/import', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: b })

  it('imports the document or refuses it whole with bad_request, never a 500', async () => {
    expect((await classify(await post(JSON.stringify(valid())))).body).toEqual({
      status: 'ok',
      data: { vaults: 1, compositions: 1, vault_snapshots: 1, transactions: 1 },
      server_time_ms: expect.any(Number),
    })
    const tally = new Tally('import fuzz')
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await post(b)
        tally.add(res.status)
        const copy = res.clone()
        expect(await violation(res, { graphql: false, method: 'POST', allowed: [200, 400] }), b.slice(0, 400)).toBeUndefined()
        if (res.status === 200)
          expect(await copy.json()).toEqual({
            status: 'ok',
            data: { vaults: expect.any(Number), compositions: expect.any(Number), vault_snapshots: expect.any(Number), transactions: expect.any(Number) },
            server_time_ms: expect.any(Number),
          })
      }),
      runs(150),
    )
    tally.print()
    expect(tally.byStatus.get('200')).toBeGreaterThan(0)
    expect(tally.byStatus.get('400')).toBeGreaterThan(0)
    // Whatever was thrown at it, the data that was accepted still reads back.
    expect((await t.request('/v1/vaults/fz1')).status).toBe(200)
  })
})
