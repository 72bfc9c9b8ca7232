import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import type { ImportTransaction } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { eventDataSchemas, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../src/webhooks/events.js'
import { testBackend, testDatabase } from '../support/db.js'
import { bareVault, fullVault } from '../support/explorer-data.js'
import { recordSql } from '../support/sql.js'
import { clearWebhooks, serviceFor } from './setup.js'

// An import emits its webhook events in its own transaction, computed in SQL from what it changed:
// new transactions, status changes (with the previous status), completed redeems, and vaults whose
// record or composition changed. Nothing for what stayed the same, nothing when it rolls back, and
// a fixed number of statements however many rows it writes.

let db: Database
beforeAll(async () => {
  db = await testDatabase()
})
afterAll(() => db?.close())
beforeEach(async () => {
  await clearWebhooks(db)
  await db.prisma.$executeRawUnsafe('DELETE FROM vaults')
})

const A = '0x00000000000000000000000000000000000000a1'
const B = '0x00000000000000000000000000000000000000b2'

const tx = (id: string, over: Partial<ImportTransaction> = {}): ImportTransaction => ({
  id,
  vault_id: fullVault.id,
  address: A,
  type: 'deposit',
  status: 'completed',
  amount: '1500.250',
  shares: '1428.809523809523809524',
  timestamp: '2026-11-21T10:00:00.000Z',
  completed_at: '2026-11-21T10:00:00.000Z',
  tx_hash: `0x${'c'.repeat(64)}`,
  ...over,
})

const composition = (vault_id: string, as_of: string, pct = 60) => ({
  vault_id,
  as_of,
  positions: [
    { platform: 'Aave', asset: 'USDC', symbol: 'aUSDC', pct, apy_est_pct: 4.5, icon: 'https://icons.test/aave.svg' },
    { platform: 'Morpho', asset: 'USDC', symbol: 'mUSDC', pct: 100 - pct, apy_est_pct: 5.25, icon: 'https://icons.test/morpho.svg' },
  ],
})

interface Stored {
  type: WebhookEventType
  vault_id: string
  payload: Record<string, unknown>
}

/** The outbox as written, in a stable order (type, then the data's id or vault). */
async function outbox(): Promise<Stored[]> {
  const rows = await db.prisma.$queryRawUnsafe<Stored[]>(
    `SELECT type, vault_id, payload FROM webhook_events
     ORDER BY type, coalesce(payload->>'id', payload->>'vault_id'), created_at`,
  )
  return rows
}

const deliveryCount = async () => (await db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM webhook_deliveries`))[0]!.n

async function subscribeAll() {
  return (await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/all', event_types: [...WEBHOOK_EVENT_TYPES] })).endpoint
}

const txData = (t: ImportTransaction) => ({
  id: t.id,
  vault_id: t.vault_id,
  address: t.address.toLowerCase(),
  type: t.type,
  status: t.status,
  amount: t.amount.replace(/\.?0+$/, ''),
  shares: t.shares,
  timestamp: t.timestamp,
  completed_at: t.completed_at,
  tx_hash: t.tx_hash,
})

describe(`webhook events of an import (${testBackend})`, () => {
  it('emits redeem.claimable when a redeem becomes claimable, then redeem.completed on its claim (decisions §14)', async () => {
    const endpoint = (await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/q', event_types: ['redeem.claimable', 'transaction.status_changed'] }))
      .endpoint
    expect(endpoint.event_types).toEqual(['redeem.claimable', 'transaction.status_changed'])
    const pending = tx('q1', { type: 'redeem', status: 'pending', completed_at: null })
    await importDocument({ vaults: [fullVault], transactions: [pending] }, db.prisma)
    expect(await outbox()).toEqual([])

    const claimable = { ...pending, status: 'claimable' as const }
    await importDocument({ transactions: [claimable] }, db.prisma)
    const events = await outbox()
    expect(events.map((e) => [e.type, e.payload.id])).toEqual([
      ['redeem.claimable', 'q1'],
      ['transaction.status_changed', 'q1'],
    ])
    expect(events[0]!.payload).toEqual(txData(claimable))
    expect(events[1]!.payload).toEqual({ ...txData(claimable), previous_status: 'pending' })
    expect(JSON.stringify(events[0]!.payload)).toBe(JSON.stringify(eventDataSchemas['redeem.claimable'].parse(events[0]!.payload)))

    // The same claimable state again: nothing. First seen claimable: redeem.claimable alone (no status change).
    await clearWebhooks(db)
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/q', event_types: ['redeem.claimable', 'redeem.completed'] })
    const fresh = tx('q2', { type: 'redeem', status: 'claimable', completed_at: null, timestamp: '2026-11-21T10:30:00.000Z' })
    const claimed = { ...claimable, status: 'completed' as const, completed_at: '2026-11-21T12:00:00.000Z' }
    await importDocument({ transactions: [claimed, fresh] }, db.prisma)
    expect((await outbox()).map((e) => [e.type, e.payload.id, e.payload.status])).toEqual([
      ['redeem.claimable', 'q2', 'claimable'],
      ['redeem.completed', 'q1', 'completed'],
    ])
  })

  it('emits what the import changed, exactly once, in the documented shapes', async () => {
    await subscribeAll()
    const deposit = tx('t1')
    const pendingRedeem = tx('t2', { type: 'redeem', status: 'pending', completed_at: null, address: B.toUpperCase().replace('0X', '0x') })
    const completedRedeem = tx('t3', { vault_id: bareVault.id, type: 'redeem', completed_at: '2026-11-21T11:00:00.000Z' })
    await importDocument(
      {
        vaults: [fullVault, bareVault],
        compositions: [composition(fullVault.id, '2026-11-21T00:00:00.000Z')],
        transactions: [deposit, pendingRedeem, completedRedeem],
      },
      db.prisma,
    )

    const first = await outbox()
    expect(first.map((e) => [e.type, e.payload.id ?? e.payload.vault_id])).toEqual([
      ['redeem.completed', 't3'],
      ['transaction.created', 't1'],
      ['transaction.created', 't2'],
      ['transaction.created', 't3'],
      ['vault.updated', fullVault.id],
      ['vault.updated', bareVault.id],
    ])
    expect(first.find((e) => e.type === 'transaction.created' && e.payload.id === 't2')!.payload).toEqual(txData(pendingRedeem))
    expect(first.find((e) => e.type === 'redeem.completed')!.payload).toEqual(txData(completedRedeem))
    expect(first.filter((e) => e.type === 'vault.updated').map((e) => e.payload)).toEqual([
      { vault_id: fullVault.id, status: 'active', tvl: '1250000.5', share_price: '1.0425', changes: ['values', 'composition'] },
      { vault_id: bareVault.id, status: 'paused', tvl: '0', share_price: '1', changes: ['values'] },
    ])
    // As sent (the worker stringifies the stored payload): byte for byte what the zod schema of its
    // type makes of it, documented keys in the documented order.
    for (const e of first) {
      expect(JSON.stringify(e.payload)).toBe(JSON.stringify(eventDataSchemas[e.type].parse(e.payload)))
      expect(e.vault_id).toBe(e.payload.vault_id)
    }
    expect(await deliveryCount()).toBe(6)

    // The pending redeem completes, one deposit is new, one vault's values move; the rest is as it was.
    await clearWebhooks(db)
    await subscribeAll()
    const completed = { ...pendingRedeem, status: 'completed' as const, completed_at: '2026-11-22T09:00:00.000Z' }
    const later = tx('t4', { timestamp: '2026-11-22T10:00:00.000Z', completed_at: '2026-11-22T10:00:00.000Z' })
    const second = {
      vaults: [{ ...fullVault, tvl: '1300000', share_price: '1.05' }, bareVault],
      compositions: [composition(fullVault.id, '2026-11-21T00:00:00.000Z')],
      transactions: [deposit, completed, completedRedeem, later],
    }
    await importDocument(second, db.prisma)
    const events = await outbox()
    expect(events.map((e) => [e.type, e.payload.id ?? e.payload.vault_id])).toEqual([
      ['redeem.completed', 't2'],
      ['transaction.created', 't4'],
      ['transaction.status_changed', 't2'],
      ['vault.updated', fullVault.id],
    ])
    expect(events.find((e) => e.type === 'transaction.status_changed')!.payload).toEqual({ ...txData(completed), previous_status: 'pending' })
    expect(events.find((e) => e.type === 'redeem.completed')!.payload).toEqual(txData(completed))
    expect(events.find((e) => e.type === 'vault.updated')!.payload).toEqual({
      vault_id: fullVault.id,
      status: 'active',
      tvl: '1300000',
      share_price: '1.05',
      changes: ['values'],
    })
    for (const e of events) expect(JSON.stringify(e.payload)).toBe(JSON.stringify(eventDataSchemas[e.type].parse(e.payload)))

    // The same document again changes nothing, so it emits nothing.
    await importDocument(second, db.prisma)
    expect(await outbox()).toHaveLength(4)

    // A snapshot whose allocations change is a composition change of its vault (and only that).
    await importDocument({ compositions: [composition(fullVault.id, '2026-11-21T00:00:00.000Z', 55)] }, db.prisma)
    const changed = (await outbox()).filter((e) => e.type === 'vault.updated')
    expect(changed.map((e) => e.payload.changes)).toEqual([['values'], ['composition']])
  })

  it('counts vault snapshots that move the live values as a values change, and older ones as none', async () => {
    await importDocument({ vaults: [fullVault] }, db.prisma, { clock: () => new Date('2026-11-21T00:00:00.000Z') })
    await subscribeAll()
    const snapshot = (as_of: string, share_price: string, tvl: string) => ({ vault_id: fullVault.id, as_of, share_price, tvl, base_asset_price_usd: '1' })
    await importDocument({ vault_snapshots: [snapshot('2026-11-20T00:00:00.000Z', '1.04', '1000')] }, db.prisma)
    expect(await outbox()).toEqual([])
    await importDocument({ vault_snapshots: [snapshot('2026-11-22T00:00:00.000Z', '1.0431', '1250001')] }, db.prisma)
    expect((await outbox()).map((e) => e.payload)).toEqual([
      { vault_id: fullVault.id, status: 'active', tvl: '1250001', share_price: '1.0431', changes: ['values'] },
    ])
  })

  it('follows the endpoints: types and vaults nobody subscribes to are not written', async () => {
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/v2', event_types: ['vault.updated'] })
    await importDocument({ vaults: [fullVault, bareVault] }, db.prisma) // the vaults must exist before a filter can name them
    await clearWebhooks(db)
    const service = serviceFor(db)
    await service.createEndpoint({ url: 'http://127.0.0.1:9/bare', event_types: ['transaction.created', 'vault.updated'], vault_ids: [bareVault.id] })
    const off = (await service.createEndpoint({ url: 'http://127.0.0.1:9/off', event_types: [...WEBHOOK_EVENT_TYPES] })).endpoint
    await service.setDisabled(off.id, true)
    await importDocument(
      {
        vaults: [
          { ...fullVault, tvl: '1' },
          { ...bareVault, tvl: '2' },
        ],
        transactions: [tx('t1'), tx('t2', { vault_id: bareVault.id, type: 'redeem' })],
      },
      db.prisma,
    )
    expect((await outbox()).map((e) => [e.type, e.payload.id ?? e.payload.vault_id])).toEqual([
      ['transaction.created', 't2'],
      ['vault.updated', bareVault.id],
    ])
    expect(await deliveryCount()).toBe(2)
  })

  it('emits nothing when the import rolls back, even after its rows and events were written', async () => {
    await subscribeAll()
    await importDocument({ vaults: [fullVault] }, db.prisma)
    await clearWebhooks(db)
    await subscribeAll()
    // A real database failure on the last row, after the vault, the composition and the other
    // transactions were written (and captured) in the same transaction.
    await db.prisma.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.id = 'boom' THEN RAISE EXCEPTION 'boom refused'; END IF; RETURN NEW; END $$`)
    await db.prisma.$executeRawUnsafe(`CREATE TRIGGER refuse_boom BEFORE INSERT ON transactions FOR EACH ROW EXECUTE FUNCTION refuse_boom()`)
    try {
      await expect(
        importDocument(
          {
            vaults: [{ ...fullVault, tvl: '99' }],
            compositions: [composition(fullVault.id, '2026-11-23T00:00:00.000Z')],
            transactions: [tx('t1'), tx('t2'), tx('boom')],
          },
          db.prisma,
        ),
      ).rejects.toThrow(/boom refused/)
    } finally {
      await db.prisma.$executeRawUnsafe('DROP TRIGGER refuse_boom ON transactions')
    }
    expect(await outbox()).toEqual([])
    expect(await deliveryCount()).toBe(0)
    expect(await db.prisma.transaction.count()).toBe(0)
    // The capture table went with the transaction: the next import starts clean and works.
    await importDocument({ transactions: [tx('t1')] }, db.prisma)
    expect((await outbox()).map((e) => e.type)).toEqual(['transaction.created'])
  })

  it('sends a fixed number of statements however many rows change, and next to nothing when no endpoint listens', async () => {
    await importDocument({ vaults: [fullVault] }, db.prisma)
    const many = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => tx(`${prefix}-${i}`))

    // Both sizes above the ANALYZE threshold (1000 rows) and within one chunk (5000).
    const idle = await recordSql(() => importDocument({ vaults: [{ ...fullVault, tvl: '4' }], transactions: many(1000, 'idle') }, db.prisma))
    const webhookSql = idle.statements.filter((s) => /webhook|vaultgate_import_changes/.test(s))
    expect(webhookSql.map((s) => s.trim())).toEqual(['SELECT DISTINCT unnest(event_types) AS type FROM webhook_endpoints WHERE disabled_at IS NULL'])

    await subscribeAll()
    const small = await recordSql(() => importDocument({ vaults: [{ ...fullVault, tvl: '5' }], transactions: many(1000, 'small') }, db.prisma))
    const large = await recordSql(() => importDocument({ vaults: [{ ...fullVault, tvl: '6' }], transactions: many(4900, 'large') }, db.prisma))
    expect(large.statements.length).toBe(small.statements.length)
    expect(large.statements.length).toBe(idle.statements.length + 3) // the capture table, the emission and the NOTIFY
    expect((await outbox()).filter((e) => e.type === 'transaction.created')).toHaveLength(5900)
  })
})
