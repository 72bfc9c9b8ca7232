import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { rollBack } from '../../src/sources/store.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { listen, liveTransaction, liveVault } from '../support/live.js'
import { subscribe } from '../support/sse.js'

// A chain reorg taken back (src/sources/store.ts rollBack) is a change like an import: the vault's
// subscribers get its restored values, the wallet's subscribers the redeem pending again, and
// /v1/status and the vault's answers the data time of what is left.

const DAVE = '0xd0000000000000000000000000000000000000d4'
const FIRST_IMPORT = new Date('2026-11-25T00:00:00.000Z')
const SECOND_IMPORT = new Date('2026-11-26T00:00:00.000Z')

describe(`subscriptions after a chain-source rollback (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  beforeAll(async () => {
    t = await createTestApp()
    ;({ base, stop } = await listen(t.app))
  })
  afterAll(async () => {
    await stop()
    await t.close()
  })
  const dataAsOf = async () => ((await (await fetch(`${base}/v1/status`)).json()) as { data_as_of: string | null }).data_as_of
  /** The vault's own data time: the Data-As-Of of an answer about it (vaults.data_as_of). */
  const vaultAsOf = async () => (await fetch(`${base}/v1/vaults/chain-a`)).headers.get('data-as-of')

  it("sends the vault's restored values and the redeem pending again; data_as_of goes back", async () => {
    // What the follower would have written: a pending redeem, then a range (blocks 11-20) that
    // completed it, recorded a snapshot and added a deposit.
    await importDocument(
      {
        vaults: [liveVault('chain-a', { tvl: '100' })],
        transactions: [liveTransaction('redeem-1', 'chain-a', DAVE, { type: 'redeem', status: 'pending', completed_at: null })],
      },
      t.db.prisma,
      { clock: () => FIRST_IMPORT },
    )
    await importDocument(
      {
        vaults: [],
        vault_snapshots: [{ vault_id: 'chain-a', as_of: '2030-01-01T00:00:00.000Z', share_price: '1.5', tvl: '900', base_asset_price_usd: '1' }],
        transactions: [liveTransaction('redeem-1', 'chain-a', DAVE, { type: 'redeem' }), liveTransaction('deposit-2', 'chain-a', DAVE)],
      },
      t.db.prisma,
      { clock: () => SECOND_IMPORT },
    )
    // The range's snapshot is dated after its import: the data is as new as the import (decisions §10).
    expect(await dataAsOf()).toBe(SECOND_IMPORT.toISOString())
    expect(await vaultAsOf()).toBe(SECOND_IMPORT.toISOString())
    await t.db.prisma.$executeRawUnsafe(
      `INSERT INTO source_cursors (vault_id, chain_id, address, block_number, block_hash, block_timestamp, progress, updated_at)
       VALUES ('chain-a', 1, '0x2222222222222222222222222222222222222222', 20, '0xb20', 1000, '{}', now())`,
    )
    await t.db.prisma.$executeRawUnsafe(
      `INSERT INTO source_journal (vault_id, from_block, to_block, to_hash, previous_block_number, previous_block_hash, previous_block_timestamp,
         previous_progress, inserted_transactions, completed_transactions, snapshot_times, created_at)
       VALUES ('chain-a', 11, 20, '0xb20', 10, '0xb10', 900, '{}', ARRAY['deposit-2'], ARRAY['redeem-1'], ARRAY['2030-01-01T00:00:00.000Z'::timestamptz], now())`,
    )
    const vault = await subscribe(fetch, `${base}/graphql`, 'subscription { vaultUpdated(id: "chain-a") { id tvl sharePrice } }')
    const wallet = await subscribe(fetch, `${base}/graphql`, `subscription { walletActivity(address: "${DAVE}") { id status } }`)
    try {
      const undone = await rollBack(t.db.prisma, { vaultIds: ['chain-a'], keep: 10n, now: new Date() })
      expect(undone).toMatchObject({ transactionsDeleted: 1, redeemsReopened: 1, snapshotsDeleted: 1 })
      expect((await vault.next(1000)).data.data.vaultUpdated).toEqual({ id: 'chain-a', tvl: '100', sharePrice: '1' })
      expect(await wallet.next(1000)).toEqual({ event: 'next', data: { data: { walletActivity: { id: 'redeem-1', status: 'pending' } } } })
      // The deleted deposit has nothing left to show.
      expect(wallet.buffered).toEqual([])
      // The newest data left is the first import's snapshot of the vault record (the transactions
      // are from 2026-11-20): data_as_of goes back to it, on this instance at once.
      expect(await dataAsOf()).toBe(FIRST_IMPORT.toISOString())
      expect(await vaultAsOf()).toBe(FIRST_IMPORT.toISOString())
    } finally {
      vault.close()
      wallet.close()
    }
  })
})
