import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import type { ImportTransaction } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'
import { answered } from '../support/bodies.js'

const NOW = new Date('2026-11-21T12:00:00.000Z')
/** The import's time: its snapshots of the vault records are the newest data, so every `as_of` (decisions §10). */
const IMPORTED = new Date('2026-11-21T11:30:00.000Z')
const A = '0x52908400098527886e0f7030069857d2e4169ee7'
const A_MIXED = '0x52908400098527886E0F7030069857D2E4169EE7'
const B = '0x8617e340b3d01fa5f11f306f4090fd50e238070d'
const day = (d: number) => new Date(Date.UTC(2026, 9, d)).toISOString() // October 2026

const tx = (
  id: string,
  vault: string,
  type: ImportTransaction['type'],
  status: ImportTransaction['status'],
  amount: string,
  shares: string,
  d: number,
  address = A,
) => txDoc(id, { vault_id: vault, address, type, status, amount, shares, timestamp: day(d) })

// s1: deposits, withdrawals, a pending redeem and a loss (share price 0.9 after deposits at 1 and 1.05).
//   balance  = 1000 + 476.190476190476190476 − 200 (withdrawn) − 100 (pending redeem) = 1176.190476190476190476
//   value    = 1176.190476190476190476 × 0.9 = 1058.5714285714285714284 (base units)
//   USD      = × 1.0002 = 1058.78314285714285714268568 → 1058.783142857142857143
//   earned   = 1058.5714285714285714284 + 210 + 95 − 1500 = −136.4285714285714285716 → −136.428571428571428572
// s2: one deposit that gained, 2 of its 8 shares in a claimable redeem (value 6 × 1.3 × 2.5 = 19.5 USD;
//   earned 7.8 + 2.6 − 10 = 0.4).  s3: deposited and fully withdrawn at a profit (closed).
// s4: only a pending deposit (no position).  s5: no transactions of A.
const transactions: ImportTransaction[] = [
  tx('s1-failed', 's1', 'deposit', 'failed', '200', '200', 1),
  tx('s1-early-pending', 's1', 'deposit', 'cancelled', '50', '50', 2),
  tx('s1-d1', 's1', 'deposit', 'completed', '1000', '1000', 3),
  tx('s1-d2', 's1', 'deposit', 'completed', '500', '476.190476190476190476', 5),
  tx('s1-d3', 's1', 'deposit', 'pending', '300', '300', 20),
  tx('s1-w1', 's1', 'withdraw', 'completed', '210', '200', 10),
  tx('s1-w2', 's1', 'withdraw', 'failed', '999', '999', 11),
  tx('s1-r1', 's1', 'redeem', 'pending', '95', '100', 15),
  tx('s1-r2', 's1', 'redeem', 'cancelled', '50', '50', 16),
  tx('s1-b', 's1', 'deposit', 'completed', '7777', '7777', 1, B),
  tx('s2-d1', 's2', 'deposit', 'completed', '10', '8', 7),
  // A claimable redeem (decisions §14) has left the balance like a pending one.
  tx('s2-r1', 's2', 'redeem', 'claimable', '2.6', '2', 13),
  tx('s3-d1', 's3', 'deposit', 'completed', '100', '100', 4),
  tx('s3-w1', 's3', 'withdraw', 'completed', '105', '100', 12),
  tx('s4-d1', 's4', 'deposit', 'pending', '40', '40', 9),
  tx('b-s2', 's2', 'deposit', 'completed', '1', '1', 9, B),
]

const s1 = {
  vault_id: 's1',
  as_of: '2026-11-21T11:30:00.000Z',
  share_balance: '1176.190476190476190476',
  share_price: '0.9',
  position_value_usd: '1058.783142857142857143',
  total_deposits: '1500',
  all_time_earned: '-136.428571428571428572',
  first_deposit_at: '2026-10-03T00:00:00.000Z',
}
const s2 = {
  vault_id: 's2',
  as_of: s1.as_of,
  share_balance: '6',
  share_price: '1.3',
  position_value_usd: '19.5',
  total_deposits: '10',
  all_time_earned: '0.4',
  first_deposit_at: '2026-10-07T00:00:00.000Z',
}
const s3 = {
  vault_id: 's3',
  as_of: s1.as_of,
  share_balance: '0',
  share_price: '1',
  position_value_usd: '0',
  total_deposits: '100',
  all_time_earned: '5',
  first_deposit_at: '2026-10-04T00:00:00.000Z',
}

const camel = (p: typeof s1) => ({
  vaultId: p.vault_id,
  asOf: p.as_of,
  shareBalance: p.share_balance,
  sharePrice: p.share_price,
  positionValueUsd: p.position_value_usd,
  totalDeposits: p.total_deposits,
  allTimeEarned: p.all_time_earned,
  firstDepositAt: p.first_deposit_at,
})
const FIELDS = 'vaultId asOf shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned firstDepositAt'

describe(`position summary (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    await importDocument(
      {
        vaults: [
          vaultDoc('s1', { share_price: '0.9', base_asset_price_usd: '1.0002' }),
          vaultDoc('s2', { share_price: '1.3', base_asset_price_usd: '2.5', base_asset: 'WETH' }),
          vaultDoc('s3', { share_price: '1.000000000000000000' }),
          vaultDoc('s4'),
          vaultDoc('s5'),
        ],
        transactions,
      },
      t.db.prisma,
      { clock: () => IMPORTED },
    )
  })
  afterAll(() => t.close())
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  async function summary(address: string, vault: string) {
    const res = await t.request(`/v1/users/${address}/vaults/${vault}/summary`)
    return { status: res.status, body: await res.json(), cacheControl: res.headers.get('cache-control') }
  }
  const notFound = (message: string) => ({
    status: 404,
    cacheControl: null,
    body: { status: 'error', error: { code: 'not_found', message }, server_time_ms: NOW.getTime() },
  })

  it('computes a summary with deposits, withdrawals, a pending redeem and a loss', async () => {
    expect(await summary(A_MIXED, 's1')).toEqual({ status: 200, cacheControl: 'no-store', body: s1 })
  })

  it('computes a gain, and a fully withdrawn position', async () => {
    expect((await summary(A, 's2')).body).toEqual(s2)
    expect((await summary(A, 's3')).body).toEqual(s3)
  })

  it('answers 404 for an unknown vault and for a wallet that never completed a deposit there', async () => {
    expect(await summary(A, 'nope')).toEqual(notFound('Vault "nope" not found.'))
    expect(await summary(A, 's4')).toEqual(notFound(`Wallet ${A} has no completed deposit in vault "s4".`))
    expect(await summary(A_MIXED, 's5')).toEqual(notFound(`Wallet ${A} has no completed deposit in vault "s5".`))
    expect(await summary('0x0000000000000000000000000000000000000001', 's1')).toEqual(
      notFound('Wallet 0x0000000000000000000000000000000000000001 has no completed deposit in vault "s1".'),
    )
  })

  it('answers position(vaultId) over GraphQL, null without a completed deposit and not_found for an unknown vault', async () => {
    const res = await t.graphql(
      `query ($a: String!) { user(address: $a) { s1: position(vaultId: "s1") { ${FIELDS} } s4: position(vaultId: "s4") { vaultId } } }`,
      { a: A },
    )
    expect(res).toEqual({ status: 200, body: answered({ user: { s1: camel(s1), s4: null } }) })
    const unknown = await t.graphql(`{ user(address: "${A}") { position(vaultId: "nope") { vaultId } } }`)
    expect(unknown.body).toEqual({
      ...answered({ user: { position: null } }),
      errors: [
        expect.objectContaining({ message: 'Vault "nope" not found.', path: ['user', 'position'], extensions: expect.objectContaining({ code: 'not_found' }) }),
      ],
    })
  })

  it('lists positions across vaults (open ones by default) in one statement whatever the number of vaults', async () => {
    const q = `query ($a: String!, $all: Boolean!) { user(address: $a) { positions(includeClosed: $all) { ${FIELDS} } } }`
    const open = await recordSql(() => t.graphql(q, { a: A, all: false }))
    expect(open.result).toEqual({ status: 200, body: answered({ user: { positions: [camel(s1), camel(s2)] } }) })
    expect(open.statements).toHaveLength(1)
    const all = await recordSql(() => t.graphql(q, { a: A, all: true }))
    expect(all.result.body).toEqual(answered({ user: { positions: [camel(s1), camel(s2), camel(s3)] } }))
    expect(all.statements).toHaveLength(1)
    // B holds two vaults, a wallet without history none: the same single statement.
    const b = await recordSql(() => t.graphql(q, { a: B, all: false }))
    expect(b.result.body.data.user.positions.map((p: { vaultId: string }) => p.vaultId)).toEqual(['s1', 's2'])
    expect(b.statements).toHaveLength(1)
    const none = await recordSql(() => t.graphql(q, { a: '0x0000000000000000000000000000000000000001', all: true }))
    expect(none.result.body).toEqual(answered({ user: { positions: [] } }))
    expect(none.statements).toHaveLength(1)
  })

  it('answers GET /v1/users/{address}/positions: open positions by default, closed ones with include_closed=true, in one statement', async () => {
    const get = async (path: string) => {
      const { result: res, statements } = await recordSql(() => t.request(path))
      return { status: res.status, body: await res.json(), cacheControl: res.headers.get('cache-control'), statements: statements.length }
    }
    const ok = (body: object) => ({ status: 200, cacheControl: 'no-store', statements: 1, body })
    expect(await get(`/v1/users/${A_MIXED}/positions`)).toEqual(ok({ address: A, as_of: s1.as_of, positions: [s1, s2] }))
    expect(await get(`/v1/users/${A}/positions?include_closed=false`)).toEqual(ok({ address: A, as_of: s1.as_of, positions: [s1, s2] }))
    expect(await get(`/v1/users/${A}/positions?include_closed=true`)).toEqual(ok({ address: A, as_of: s1.as_of, positions: [s1, s2, s3] }))
    const nobody = '0x0000000000000000000000000000000000000001'
    expect(await get(`/v1/users/${nobody}/positions?include_closed=true`)).toEqual(ok({ address: nobody, as_of: s1.as_of, positions: [] }))
    for (const bad of ['yes', 'TRUE', '1', '']) {
      expect(await get(`/v1/users/${A}/positions?include_closed=${bad}`)).toEqual({
        status: 400,
        cacheControl: null,
        statements: 0,
        body: { status: 'error', error: { code: 'bad_request', message: 'include_closed must be one of "false", "true".' }, server_time_ms: NOW.getTime() },
      })
    }
    expect((await get('/v1/users/0x1234/positions')).body.error).toEqual({
      code: 'bad_request',
      message: 'address must be an EVM address: 0x followed by 40 hex digits.',
    })
  })

  it('batches position(vaultId) across aliases and wallets into one statement', async () => {
    const { result, statements } = await recordSql(() =>
      t.graphql(`{
        a: user(address: "${A}") { s1: position(vaultId: "s1") { shareBalance } s2: position(vaultId: "s2") { shareBalance } s3: position(vaultId: "s3") { shareBalance } }
        b: user(address: "${B}") { s1: position(vaultId: "s1") { shareBalance } s5: position(vaultId: "s5") { shareBalance } }
      }`),
    )
    expect(result.body).toEqual(
      answered({
        a: { s1: { shareBalance: s1.share_balance }, s2: { shareBalance: '6' }, s3: { shareBalance: '0' } },
        b: { s1: { shareBalance: '7777' }, s5: null },
      }),
    )
    expect(statements).toHaveLength(1)
  })

  it('answers position_value_usd null while the base-asset USD price is unknown, the other values as usual', async () => {
    await importDocument(
      {
        vaults: [vaultDoc('s6', { share_price: '2', base_asset_price_usd: null })],
        transactions: [tx('s6-d1', 's6', 'deposit', 'completed', '10', '5', 8, B)],
      },
      t.db.prisma,
    )
    expect((await summary(B, 's6')).body).toMatchObject({ share_balance: '5', share_price: '2', position_value_usd: null, all_time_earned: '0' })
  })
})
