import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import type { ImportTransaction } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'
import { answered } from '../support/bodies.js'

// Pending redeems with known answers. The request time is pinned so the 90-day window of the
// average delay is exact; `as_of` is the time of the newest data (decisions §10): the import's
// snapshots of the vault records, half an hour before the request.
const NOW = new Date('2026-11-21T12:00:00.000Z')
const IMPORTED = new Date('2026-11-21T11:30:00.000Z')
const at = (msBeforeNow: number) => new Date(NOW.getTime() - msBeforeNow).toISOString()
const S = 1000
const H = 3_600_000
const D = 86_400_000

const A = '0x52908400098527886e0f7030069857d2e4169ee7'
const A_MIXED = '0x52908400098527886E0F7030069857D2E4169EE7'
const B = '0x8617e340b3d01fa5f11f306f4090fd50e238070d'
const C = '0xde709f2102306220921060314715629080e2fb77'
const E = '0x27b1fdb04752bbc536007a920d24acb045561c26'

const pending = (id: string, vault: string, amount: string, submitted: string, address = A) =>
  txDoc(id, { vault_id: vault, address, type: 'redeem', status: 'pending', amount, timestamp: submitted })
/** A redeem by someone that took `delayMs` and completed `completedAgo` before now. */
const completed = (id: string, vault: string, delayMs: number, completedAgo: number, fields: Partial<ImportTransaction> = {}) =>
  txDoc(id, {
    vault_id: vault,
    address: B,
    type: 'redeem',
    status: 'completed',
    amount: '1',
    timestamp: at(completedAgo + delayMs),
    completed_at: at(completedAgo),
    ...fields,
  })

const transactions: ImportTransaction[] = [
  // A's pending redeems in v1, v2, v3: the sum needs all 18 decimals.
  pending('p1', 'v1', '1234567.123456789012345678', at(3 * D)),
  pending('p2', 'v2', '0.000000000000000001', at(1 * D)),
  pending('p3', 'v1', '0.1', at(2 * H)),
  pending('p4', 'v3', '98765.432109876543210988', at(5 * D)),
  // A's other rows: not pending, or not redeems. a-done is a completed redeem: its delay of 86400 s
  // counts below like anyone's.
  txDoc('a-done', { vault_id: 'v1', address: A, type: 'redeem', status: 'completed', amount: '5', timestamp: at(20 * D), completed_at: at(19 * D) }),
  txDoc('a-cancelled', { vault_id: 'v1', address: A, type: 'redeem', status: 'cancelled', amount: '6', timestamp: at(4 * D) }),
  txDoc('a-withdraw', { vault_id: 'v2', address: A, type: 'withdraw', status: 'pending', amount: '7', timestamp: at(4 * D) }),
  // Someone else's pending redeem.
  pending('b-pending', 'v1', '8', at(1 * D), B),
  // Completed redeems in the last 90 days in A's vaults (any wallet): besides a-done, delays 3600.5 s,
  // 7200.25 s, 86400 s, 1000.999 s and 102 s (completed exactly 90 days ago: the window includes its
  // start). Mean 184703.749 s / 6 = 30783.958 s: rounded down, 30783.
  completed('c1', 'v1', 3600.5 * S, 10 * D),
  completed('c2', 'v1', 7200.25 * S, 1 * H, { address: C }),
  completed('c3', 'v2', 86400 * S, 30 * D),
  completed('c4', 'v3', 1000.999 * S, 89 * D),
  completed('c5', 'v1', 102 * S, 90 * D),
  // Outside the rule: completed 90 days and 1 ms ago, in a vault where A has nothing pending,
  // failed or cancelled, or a withdrawal.
  completed('x1', 'v1', 999_999 * S, 90 * D + 1),
  completed('x2', 'v4', 5 * S, 1 * D),
  completed('x3', 'v1', 500_000 * S, 1 * D, { status: 'failed' }),
  completed('x4', 'v2', 500_000 * S, 1 * D, { status: 'cancelled' }),
  completed('x5', 'v1', 500_000 * S, 1 * D, { type: 'withdraw' }),
  // E: a pending redeem in a vault no redeem ever completed in.
  pending('e1', 'v5', '2.5', at(6 * H), E),
]

describe(`GET /v1/users/{address}/redeems (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    await importDocument({ vaults: ['v1', 'v2', 'v3', 'v4', 'v5', 'v6'].map((id) => vaultDoc(id)), transactions }, t.db.prisma, { clock: () => IMPORTED })
  })
  afterAll(() => t.close())
  // Only Date is faked: the database drivers' timers keep running.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  async function get(address: string) {
    const res = await t.request(`/v1/users/${address}/redeems`)
    return { status: res.status, body: await res.json(), cacheControl: res.headers.get('cache-control') }
  }

  it('lists pending redeems across vaults, oldest first, with their exact sum and the average delay in seconds', async () => {
    expect(await get(A_MIXED)).toEqual({
      status: 200,
      cacheControl: 'no-store',
      body: {
        address: A,
        as_of: '2026-11-21T11:30:00.000Z',
        // Queues (decisions §14): v1 holds p1, b-pending (B's) and p3 in that order; v2 and v3
        // only A's. Delays in the last 90 days, whole seconds: v1 102, 3600, 7200, 86400 (nearest
        // rank: p50 = 2nd = 3600, p90 = 4th = 86400); v2 86400; v3 1000 (1000.999 rounded down).
        pending_redeems: [
          {
            vault_id: 'v3',
            amount: '98765.432109876543210988',
            submitted_at: '2026-11-16T12:00:00.000Z',
            transaction_type: 'redeem',
            tx_hash: transactions[3]!.tx_hash,
            status: 'pending',
            queue_position: 1,
            amount_ahead: '0',
            eta: { p50: '2026-11-16T12:16:40.000Z', p90: '2026-11-16T12:16:40.000Z' },
          },
          {
            vault_id: 'v1',
            amount: '1234567.123456789012345678',
            submitted_at: '2026-11-18T12:00:00.000Z',
            transaction_type: 'redeem',
            tx_hash: transactions[0]!.tx_hash,
            status: 'pending',
            queue_position: 1,
            amount_ahead: '0',
            eta: { p50: '2026-11-18T13:00:00.000Z', p90: '2026-11-19T12:00:00.000Z' },
          },
          {
            vault_id: 'v2',
            amount: '0.000000000000000001',
            submitted_at: '2026-11-20T12:00:00.000Z',
            transaction_type: 'redeem',
            tx_hash: transactions[1]!.tx_hash,
            status: 'pending',
            queue_position: 1,
            amount_ahead: '0',
            eta: { p50: '2026-11-21T12:00:00.000Z', p90: '2026-11-21T12:00:00.000Z' },
          },
          {
            vault_id: 'v1',
            amount: '0.1',
            submitted_at: '2026-11-21T10:00:00.000Z',
            transaction_type: 'redeem',
            tx_hash: transactions[2]!.tx_hash,
            status: 'pending',
            queue_position: 3,
            amount_ahead: '1234575.123456789012345678',
            eta: { p50: '2026-11-21T11:00:00.000Z', p90: '2026-11-22T10:00:00.000Z' },
          },
        ],
        total_pending: '1333332.655566665555556667',
        total_claimable: '0',
        average_redeem_delay: 30783,
      },
    })
  })

  it('answers an empty list, "0" and delay 0 for a wallet without pending redeems, in one statement', async () => {
    const { result, statements } = await recordSql(() => get(C))
    expect(result).toEqual({
      status: 200,
      cacheControl: 'no-store',
      body: { address: C, as_of: '2026-11-21T11:30:00.000Z', pending_redeems: [], total_pending: '0', total_claimable: '0', average_redeem_delay: 0 },
    })
    expect(statements).toHaveLength(1)
  })

  it('answers delay 0 when no redeem completed in the wallet’s vaults in the last 90 days', async () => {
    expect((await get(E)).body).toEqual({
      address: E,
      as_of: '2026-11-21T11:30:00.000Z',
      pending_redeems: [
        {
          vault_id: 'v5',
          amount: '2.5',
          submitted_at: '2026-11-21T06:00:00.000Z',
          transaction_type: 'redeem',
          tx_hash: transactions.at(-1)!.tx_hash,
          status: 'pending',
          queue_position: 1,
          amount_ahead: '0',
          eta: null,
        },
      ],
      total_pending: '2.5',
      total_claimable: '0',
      average_redeem_delay: 0,
    })
  })

  it('reads the list and the delay with two statements on their partial indexes', async () => {
    const { statements } = await recordSql(() => get(A))
    expect(statements).toHaveLength(2)
    expect(statements[0]).toMatch(/WHERE t.address = \$1 AND t.type = 'redeem' AND \(t.status = 'pending' OR t.status = 'claimable'\)/)
    expect(statements[1]).toMatch(/WHERE type = 'redeem' AND status = 'completed' AND vault_id IN \(\$1,\$2,\$3\)/)
    expect(statements[1]).toMatch(/percentile_disc\(0\.5\).*GROUP BY GROUPING SETS \(\(vault_id\), \(\)\)/s)
  })

  it('answers the same over GraphQL', async () => {
    const res = await t.graphql(
      `query ($a: String!) { user(address: $a) { pendingRedeems { address asOf totalPending totalClaimable averageRedeemDelay pendingRedeems { vaultId amount submittedAt transactionType txHash status queuePosition amountAhead eta { p50 p90 } } } } }`,
      { a: A_MIXED },
    )
    expect(res).toEqual({
      status: 200,
      body: answered({
        user: {
          pendingRedeems: {
            address: A,
            asOf: '2026-11-21T11:30:00.000Z',
            totalPending: '1333332.655566665555556667',
            totalClaimable: '0',
            averageRedeemDelay: 30783,
            pendingRedeems: [
              [3, 1, '0', '2026-11-16T12:16:40.000Z', '2026-11-16T12:16:40.000Z'],
              [0, 1, '0', '2026-11-18T13:00:00.000Z', '2026-11-19T12:00:00.000Z'],
              [1, 1, '0', '2026-11-21T12:00:00.000Z', '2026-11-21T12:00:00.000Z'],
              [2, 3, '1234575.123456789012345678', '2026-11-21T11:00:00.000Z', '2026-11-22T10:00:00.000Z'],
            ].map(([i, queuePosition, amountAhead, p50, p90]) => {
              const p = transactions[i as number]!
              return {
                vaultId: p.vault_id,
                amount: p.amount,
                submittedAt: p.timestamp,
                transactionType: 'redeem',
                txHash: p.tx_hash,
                status: 'pending',
                queuePosition,
                amountAhead,
                eta: { p50, p90 },
              }
            }),
          },
        },
      }),
    })
  })
})

// The redeem lifecycle (decisions §14) on a seeded history with known answers: queue places with
// ties on the submission time, claimable redeems (out of the queue, their own total), the
// nearest-rank percentiles of a known set of delays, and a wallet with redeems in ten vaults
// answered by two statements (one for all the percentiles).
describe(`redeem queue and ETA (${testBackend})`, () => {
  const W = '0x1111111111111111111111111111111111111111'
  const O = '0x2222222222222222222222222222222222222222'
  const red = (id: string, vault: string, status: 'pending' | 'claimable', amount: string, submitted: string, address = W) =>
    txDoc(id, { vault_id: vault, address, type: 'redeem', status, amount, timestamp: submitted })
  const queueVaults = Array.from({ length: 9 }, (_, i) => `q${i + 2}`)
  const seeded: ImportTransaction[] = [
    // q1's queue in serving order: q1-o1, w1, q1-o2, w3 (same time as q1-o2: the id decides), q1-o3.
    red('q1-o1', 'q1', 'pending', '1.5', at(30 * H), O),
    red('w1', 'q1', 'pending', '10', at(10 * H)),
    red('q1-o2', 'q1', 'pending', '2.25', at(5 * H), O),
    red('w3', 'q1', 'pending', '0.5', at(5 * H)),
    red('q1-o3', 'q1', 'pending', '1000', at(1 * H), O),
    // Claimable: out of the queue (someone else's counts for nobody), in total_claimable (W's).
    red('q1-c', 'q1', 'claimable', '100', at(40 * H), O),
    red('w2', 'q1', 'claimable', '4', at(20 * H)),
    red('w11', 'q11', 'claimable', '0.000000000000000001', at(30 * 60 * S)),
    // q1's delays: 100.9 s, 200 s, …, 1000 s (whole seconds 100 … 1000): nearest rank p50 = 5th = 500,
    // p90 = 9th = 900. A tenth-of-the-window-older one is outside the 90 days.
    ...Array.from({ length: 10 }, (_, k) => completed(`q1-d${k}`, 'q1', (k + 1) * 100 * S + (k === 0 ? 900 : 0), (k + 1) * D)),
    completed('q1-old', 'q1', 1 * S, 91 * D),
    // q2 … q10: one W redeem each, submitted 4 h ago + k min; one completed redeem of k min.
    ...queueVaults.map((v, i) => red(`w-${v}`, v, 'pending', `${i + 2}`, at(4 * H - (i + 2) * 60 * S))),
    ...queueVaults.map((v, i) => completed(`d-${v}`, v, (i + 2) * 60 * S, 2 * D)),
  ]

  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    const vaults = ['q1', ...queueVaults, 'q11'].map((id) => vaultDoc(id))
    await importDocument({ vaults, transactions: seeded }, t.db.prisma, { clock: () => IMPORTED })
  })
  afterAll(() => t.close())
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: NOW })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  const hash = (id: string) => seeded.find((s) => s.id === id)!.tx_hash
  const item = (id: string, vault: string, amount: string, submitted: string, rest: object) => ({
    vault_id: vault,
    amount,
    submitted_at: submitted,
    transaction_type: 'redeem',
    tx_hash: hash(id),
    ...rest,
  })
  const claimable = { status: 'claimable', queue_position: null, amount_ahead: null, eta: null }

  it('ranks pending redeems in their vault queue, sums the amounts ahead, dates them by the vault’s p50/p90, and totals the claimable ones apart', async () => {
    const { result: res, statements } = await recordSql(() => t.request(`/v1/users/${W}/redeems`))
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      address: W,
      as_of: '2026-11-21T11:30:00.000Z',
      pending_redeems: [
        item('w2', 'q1', '4', '2026-11-20T16:00:00.000Z', claimable),
        item('w1', 'q1', '10', '2026-11-21T02:00:00.000Z', {
          status: 'pending',
          queue_position: 2,
          amount_ahead: '1.5',
          eta: { p50: '2026-11-21T02:08:20.000Z', p90: '2026-11-21T02:15:00.000Z' },
        }),
        item('w3', 'q1', '0.5', '2026-11-21T07:00:00.000Z', {
          status: 'pending',
          queue_position: 4,
          amount_ahead: '13.75',
          eta: { p50: '2026-11-21T07:08:20.000Z', p90: '2026-11-21T07:15:00.000Z' },
        }),
        ...queueVaults.map((v, i) => {
          const k = i + 2
          const submitted = `2026-11-21T08:${String(k).padStart(2, '0')}:00.000Z`
          const eta = `2026-11-21T08:${String(2 * k).padStart(2, '0')}:00.000Z`
          return item(`w-${v}`, v, `${k}`, submitted, { status: 'pending', queue_position: 1, amount_ahead: '0', eta: { p50: eta, p90: eta } })
        }),
        item('w11', 'q11', '0.000000000000000001', '2026-11-21T11:30:00.000Z', claimable),
      ],
      // 10 + 0.5 + (2 + … + 10)
      total_pending: '64.5',
      total_claimable: '4.000000000000000001',
      // (100.9 + 200 + … + 1000 + 60 × (2 + … + 10)) / 19 = 8740.9 / 19 = 460.05 s
      average_redeem_delay: 460,
    })
    // Ten vaults: still one statement for the list and one for every percentile and the average.
    expect(statements).toHaveLength(2)
    expect(statements[1]).toMatch(/vault_id IN \(\$1,\$2,\$3,\$4,\$5,\$6,\$7,\$8,\$9,\$10\)/)
  })

  it('answers the same over GraphQL, for another wallet in the same queue', async () => {
    const { result, statements } = await recordSql(() =>
      t.graphql(
        `{ user(address: "${O}") { pendingRedeems { totalPending totalClaimable averageRedeemDelay pendingRedeems { status queuePosition amountAhead eta { p50 } } } } }`,
      ),
    )
    // O's: q1-c claimable; q1-o1, q1-o2, q1-o3 pending (places 1, 3, 5).
    expect(result.body.data.user.pendingRedeems).toEqual({
      totalPending: '1003.75',
      totalClaimable: '100',
      averageRedeemDelay: 550,
      pendingRedeems: [
        { status: 'claimable', queuePosition: null, amountAhead: null, eta: null },
        { status: 'pending', queuePosition: 1, amountAhead: '0', eta: { p50: '2026-11-20T06:08:20.000Z' } },
        { status: 'pending', queuePosition: 3, amountAhead: '11.5', eta: { p50: '2026-11-21T07:08:20.000Z' } },
        { status: 'pending', queuePosition: 5, amountAhead: '14.25', eta: { p50: '2026-11-21T11:08:20.000Z' } },
      ],
    })
    expect(statements).toHaveLength(2)
  })
})
