import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { eventually } from '../support/eventually.js'
import { listen, liveTransaction, liveVault } from '../support/live.js'
import { recordSql } from '../support/sql.js'
import { subscribe, type Subscription } from '../support/sse.js'

// Shared live work (decisions §16, src/graphql/shared-subscriptions.ts): subscribers of the same
// operation and variables share one execution per change, over real HTTP (SSE).

const VAULT_UPDATED = 'subscription($id: ID!) { vaultUpdated(id: $id) { id tvl status } }'
const WALLET_ACTIVITY = 'subscription($address: String!) { walletActivity(address: $address) { id type amount } }'
const ALICE = '0xa11ce00000000000000000000000000000000001'

describe(`one execution per change for shared subscriptions (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  beforeAll(async () => {
    t = await createTestApp({ SUBSCRIPTIONS_PER_IP: '100', SUBSCRIPTION_HEARTBEAT_MS: '1000' })
    ;({ base, stop } = await listen(t.app))
    await importDocument({ vaults: [liveVault('sh-a'), liveVault('sh-b')] }, t.db.prisma)
  })
  afterAll(async () => {
    await stop()
    await t.close()
  })

  const open = (n: number, query: string, variables: Record<string, unknown>) =>
    Promise.all(Array.from({ length: n }, () => subscribe(fetch, `${base}/graphql`, query, variables)))

  /** The statements of one import and of answering every subscriber's event for it. */
  async function changeCost(subs: Subscription[], tvl: string): Promise<number> {
    const { statements } = await recordSql(async () => {
      await importDocument({ vaults: [liveVault('sh-a', { tvl })] }, t.db.prisma)
      for (const s of subs) expect((await s.next(5000)).data.data.vaultUpdated).toEqual({ id: 'sh-a', tvl, status: 'active' })
    })
    return statements.length
  }

  it('runs a public vaultUpdated once per change for 1 subscriber or 20: the same statements, one hub listener', async () => {
    const one = await open(1, VAULT_UPDATED, { id: 'sh-a' })
    await eventually(() => expect(t.app.subscriptions.listeners).toBe(1))
    const alone = await changeCost(one, '101')
    one[0]!.close()
    await eventually(() => expect(t.app.subscriptions.listeners).toBe(0))

    const twenty = await open(20, VAULT_UPDATED, { id: 'sh-a' })
    await eventually(() => expect([t.app.subscriptions.open, t.app.subscriptions.listeners]).toEqual([20, 1]))
    expect(await changeCost(twenty, '102')).toBe(alone)
    // Others leaving does not end it for the last one.
    for (const s of twenty.slice(1)) s.close()
    await eventually(() => expect(t.app.subscriptions.open).toBe(1))
    expect(await changeCost(twenty.slice(0, 1), '103')).toBe(alone)
    twenty[0]!.close()
    await eventually(() => expect([t.app.subscriptions.open, t.app.subscriptions.listeners]).toEqual([0, 0]))
  })

  it('keeps other variables apart, and every wallet event reaches each of its subscribers', async () => {
    const [a] = await open(1, VAULT_UPDATED, { id: 'sh-a' })
    const [b] = await open(1, VAULT_UPDATED, { id: 'sh-b' })
    const wallet = await open(3, WALLET_ACTIVITY, { address: ALICE })
    await eventually(() => expect([t.app.subscriptions.open, t.app.subscriptions.listeners]).toEqual([5, 3]))
    await importDocument({ vaults: [liveVault('sh-b', { tvl: '7' })] }, t.db.prisma)
    expect((await b!.next(5000)).data.data.vaultUpdated.tvl).toBe('7')
    // sh-a's subscriber heard nothing of sh-b's change (the same notification reached both groups).
    expect(a!.buffered).toEqual([])
    await importDocument(
      {
        transactions: [liveTransaction('sh-tx-1', 'sh-a', ALICE, { amount: '1.5' }), liveTransaction('sh-tx-2', 'sh-b', ALICE, { amount: '2.5' })],
      },
      t.db.prisma,
    )
    for (const s of wallet) {
      const got = [(await s.next(5000)).data.data.walletActivity, (await s.next(5000)).data.data.walletActivity]
      expect(got.map((e: { id: string; amount: string }) => [e.id, e.amount]).sort()).toEqual([
        ['sh-tx-1', '1.5'],
        ['sh-tx-2', '2.5'],
      ])
    }
    for (const s of [a!, b!, ...wallet]) s.close()
    await eventually(() => expect([t.app.subscriptions.open, t.app.subscriptions.listeners]).toEqual([0, 0]))
  })
})
