import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import type { ImportTransaction } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'

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
    await importDocument({ vaults: ['v1', 'v2', 'v3', 'v4', 'v5', 'v6'].map((id) => vaultDoc(id)), transactions }, undefined, { clock: () => IMPORTED })
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
        pending_redeems: [
          {
            vault_id: 'v3',
            amount: '98765.432109876543210988',
            submitted_at: '2026-11-16T12:00:00.000Z',
            transaction_type: 'redeem',
            tx_hash: transactions[3]!.tx_hash,
          },
          {
            vault_id: 'v1',
            amount: '1234567.123456789012345678',
            submitted_at: '2026-11-18T12:00:00.000Z',
            transaction_type: 'redeem',
            tx_hash: transactions[0]!.tx_hash,
          },
          {
            vault_id: 'v2',
            amount: '0.000000000000000001',
            submitted_at: '2026-11-20T12:00:00.000Z',
            transaction_type: 'redeem',
            tx_hash: transactions[1]!.tx_hash,
          },
          { vault_id: 'v1', amount: '0.1', submitted_at: '2026-11-21T10:00:00.000Z', transaction_type: 'redeem', tx_hash: transactions[2]!.tx_hash },
        ],
        total_pending: '1333332.655566665555556667',
        average_redeem_delay: 30783,
      },
    })
  })

  it('answers an empty list, "0" and delay 0 for a wallet without pending redeems, in one statement', async () => {
    const { result, statements } = await recordSql(() => get(C))
    expect(result).toEqual({
      status: 200,
      cacheControl: 'no-store',
      body: { address: C, as_of: '2026-11-21T11:30:00.000Z', pending_redeems: [], total_pending: '0', average_redeem_delay: 0 },
    })
    expect(statements).toHaveLength(1)
  })

  it('answers delay 0 when no redeem completed in the wallet’s vaults in the last 90 days', async () => {
    expect((await get(E)).body).toEqual({
      address: E,
      as_of: '2026-11-21T11:30:00.000Z',
      pending_redeems: [
        { vault_id: 'v5', amount: '2.5', submitted_at: '2026-11-21T06:00:00.000Z', transaction_type: 'redeem', tx_hash: transactions.at(-1)!.tx_hash },
      ],
      total_pending: '2.5',
      average_redeem_delay: 0,
    })
  })

  it('reads the list and the delay with two statements on their partial indexes', async () => {
    const { statements } = await recordSql(() => get(A))
    expect(statements).toHaveLength(2)
    expect(statements[0]).toMatch(/WHERE address = \$1 AND type = 'redeem' AND status = 'pending'/)
    expect(statements[1]).toMatch(/WHERE type = 'redeem' AND status = 'completed' AND vault_id IN \(\$1,\$2,\$3\)/)
  })

  it('answers the same over GraphQL', async () => {
    const res = await t.graphql(
      `query ($a: String!) { user(address: $a) { pendingRedeems { address asOf totalPending averageRedeemDelay pendingRedeems { vaultId amount submittedAt transactionType txHash } } } }`,
      { a: A_MIXED },
    )
    expect(res).toEqual({
      status: 200,
      body: {
        data: {
          user: {
            pendingRedeems: {
              address: A,
              asOf: '2026-11-21T11:30:00.000Z',
              totalPending: '1333332.655566665555556667',
              averageRedeemDelay: 30783,
              pendingRedeems: [3, 0, 1, 2].map((i) => {
                const p = transactions[i]!
                return { vaultId: p.vault_id, amount: p.amount, submittedAt: p.timestamp, transactionType: 'redeem', txHash: p.tx_hash }
              }),
            },
          },
        },
      },
    })
  })
})
