import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { sqlObservers, type Database } from '../../src/db/client.js'
import { emitEvents } from '../../src/webhooks/emit.js'
import { transactionData, type TransactionData, type WebhookEventInput } from '../../src/webhooks/events.js'
import { WEBHOOK_CHANNEL } from '../../src/webhooks/wakeups.js'
import { testDatabase } from '../support/db.js'
import { A, clearWebhooks, emit, insertVaults, feedOn, serviceFor, txEvent } from './setup.js'
import { within } from './receiver.js'

// The outbox: events are written in the data change's own transaction, to the endpoints whose
// filters match, in a fixed number of statements however many events there are.

let db: Database
beforeAll(async () => {
  db = await testDatabase()
  await insertVaults(db, 'v1', 'v2')
})
afterAll(() => db?.close())
beforeEach(() => clearWebhooks(db))

async function statementsDuring<T>(work: () => Promise<T>): Promise<{ result: T; sql: string[] }> {
  const sql: string[] = []
  const observer = (e: { sql: string }) => sql.push(e.sql.trim())
  sqlObservers.add(observer)
  try {
    return { result: await work(), sql }
  } finally {
    sqlObservers.delete(observer)
  }
}

const vaultUpdated = (vault_id: string): WebhookEventInput => ({
  type: 'vault.updated',
  data: { vault_id, status: 'paused', tvl: '1000000.5', share_price: '1.0425', changes: ['values'] },
})

const redeemCompleted = (id: string): WebhookEventInput => ({
  type: 'redeem.completed',
  data: {
    ...(txEvent(id, { vault_id: 'v2', type: 'redeem' }).data as TransactionData),
    type: 'redeem',
    status: 'completed',
    completed_at: '2026-11-22T08:30:00.000Z',
  },
})

describe('emitEvents', () => {
  it('writes each event once and one delivery per live endpoint whose type and vault filters match, in two statements', async () => {
    const service = serviceFor(db)
    const all = (
      await service.createEndpoint({
        url: 'http://127.0.0.1:9/all',
        event_types: ['vault.updated', 'transaction.created', 'transaction.status_changed', 'redeem.completed'],
      })
    ).endpoint
    const txV1 = (await service.createEndpoint({ url: 'http://127.0.0.1:9/tx-v1', event_types: ['transaction.created'], vault_ids: ['v1'] })).endpoint
    const vaultV2 = (await service.createEndpoint({ url: 'http://127.0.0.1:9/vault-v2', event_types: ['vault.updated'], vault_ids: ['v2'] })).endpoint
    const off = (await service.createEndpoint({ url: 'http://127.0.0.1:9/off', event_types: ['transaction.created'] })).endpoint
    await service.setDisabled(off.id, true)

    const events = [txEvent('t1'), txEvent('t2', { vault_id: 'v2' }), vaultUpdated('v1'), vaultUpdated('v2'), redeemCompleted('t3')]
    const { result, sql } = await statementsDuring(() => emit(db, events))

    expect(result).toEqual({ events: 5, deliveries: 7 })
    const webhookSql = sql.filter((s) => /webhook/i.test(s))
    expect(webhookSql).toHaveLength(3)
    expect(webhookSql[0]).toMatch(/^SELECT event_types, vault_ids FROM webhook_endpoints/)
    expect(webhookSql[1]).toMatch(/INSERT INTO webhook_events/)
    expect(webhookSql[2]).toBe(`NOTIFY ${WEBHOOK_CHANNEL}`)

    const rows = await db.prisma.$queryRawUnsafe<{ endpoint_id: string; type: string; vault_id: string; status: string }[]>(
      `SELECT d.endpoint_id::text AS endpoint_id, ev.type, ev.vault_id, d.status::text AS status
       FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id ORDER BY ev.type, ev.vault_id`,
    )
    const to = (id: string) =>
      rows
        .filter((r) => r.endpoint_id === id)
        .map((r) => `${r.type}/${r.vault_id}`)
        .sort()
    expect(to(all.id)).toEqual(['redeem.completed/v2', 'transaction.created/v1', 'transaction.created/v2', 'vault.updated/v1', 'vault.updated/v2'])
    expect(to(txV1.id)).toEqual(['transaction.created/v1'])
    expect(to(vaultV2.id)).toEqual(['vault.updated/v2'])
    expect(to(off.id)).toEqual([])
    expect(new Set(rows.map((r) => r.status))).toEqual(new Set(['pending']))
  })

  it('stores the payload exactly as documented: snake_case fields in their order, amounts as strings', async () => {
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/a', event_types: ['transaction.status_changed'] })
    const event: WebhookEventInput = {
      type: 'transaction.status_changed',
      data: { ...(txEvent('t9', { status: 'completed' }).data as TransactionData), status: 'completed', previous_status: 'pending' },
    }
    await emit(db, [event])
    const [row] = await db.prisma.$queryRawUnsafe<{ payload: string; type: string; vault_id: string }[]>(
      `SELECT payload::text AS payload, type, vault_id FROM webhook_events`,
    )
    expect(row).toEqual({
      type: 'transaction.status_changed',
      vault_id: 'v1',
      payload:
        '{"id":"t9","vault_id":"v1","address":"0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","type":"deposit","status":"completed",' +
        '"amount":"1500.25","shares":"1428.809523809523809524","timestamp":"2026-11-21T12:00:00.000Z",' +
        '"completed_at":"2026-11-21T12:00:00.000Z","tx_hash":"0x' +
        'b'.repeat(64) +
        '","previous_status":"pending"}',
    })
  })

  it('emits nothing when the data change rolls back', async () => {
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/a', event_types: ['vault.updated'] })
    await expect(
      db.prisma.$transaction(async (tx) => {
        await tx.vault.update({ where: { id: 'v1' }, data: { status: 'paused' } })
        expect(await emitEvents(tx, [vaultUpdated('v1')])).toEqual({ events: 1, deliveries: 1 })
        throw new Error('the import failed after emitting')
      }),
    ).rejects.toThrow('the import failed after emitting')
    const [counts] = await db.prisma.$queryRawUnsafe<{ events: number; deliveries: number }[]>(
      `SELECT (SELECT count(*) FROM webhook_events)::int AS events, (SELECT count(*) FROM webhook_deliveries)::int AS deliveries`,
    )
    expect(counts).toEqual({ events: 0, deliveries: 0 })
    expect((await db.prisma.vault.findUniqueOrThrow({ where: { id: 'v1' } })).status).toBe('active')
  })

  it('wakes listeners when the transaction commits', async () => {
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/a', event_types: ['transaction.created'] })
    const feed = feedOn(db)
    let heard = 0
    feed.on(WEBHOOK_CHANNEL, () => heard++)
    try {
      await feed.ready
      await emit(db, [txEvent('t1')])
      expect(await within(5000, () => heard > 0)).toBe(true)
    } finally {
      await feed.close()
    }
  })

  it('sends no event to the database that no endpoint subscribes to (one small query, however large the batch)', async () => {
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/a', event_types: ['vault.updated'], vault_ids: ['v2'] })
    const events = Array.from({ length: 2000 }, (_, i) => txEvent(`bulk-${i}`))
    const { result, sql } = await statementsDuring(() => emit(db, [...events, vaultUpdated('v1')]))
    expect(result).toEqual({ events: 0, deliveries: 0 })
    expect(sql.filter((s) => /webhook/i.test(s))).toEqual(['SELECT event_types, vault_ids FROM webhook_endpoints WHERE disabled_at IS NULL'])
  })

  it('writes large batches in chunks, every event exactly once', async () => {
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/a', event_types: ['transaction.created'] })
    const events = Array.from({ length: 4500 }, (_, i) => txEvent(`bulk-${i}`))
    expect(await emit(db, events)).toEqual({ events: 4500, deliveries: 4500 })
    const [row] = await db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(DISTINCT payload->>'id')::int AS n FROM webhook_events`)
    expect(row!.n).toBe(4500)
  })

  it('maps a stored transaction (Prisma decimals and dates) to the documented data exactly', async () => {
    const row = await db.prisma.transaction.create({
      data: {
        id: 'stored-1',
        vaultId: 'v1',
        address: A,
        type: 'redeem',
        status: 'completed',
        amount: '1234567.000000000000000001',
        shares: '10.500000000000000000',
        timestamp: new Date('2026-11-20T01:02:03.004Z'),
        completedAt: new Date('2026-11-21T01:02:03.000Z'),
        txHash: '0xabc',
      },
    })
    const data = transactionData(row)
    expect(data).toEqual({
      id: 'stored-1',
      vault_id: 'v1',
      address: A,
      type: 'redeem',
      status: 'completed',
      amount: '1234567.000000000000000001',
      shares: '10.5',
      timestamp: '2026-11-20T01:02:03.004Z',
      completed_at: '2026-11-21T01:02:03.000Z',
      tx_hash: '0xabc',
    })
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/a', event_types: ['redeem.completed'] })
    expect(await emit(db, [{ type: 'redeem.completed', data }])).toEqual({ events: 1, deliveries: 1 })
  })

  it('refuses an event that does not match its documented shape, and nothing is written', async () => {
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/a', event_types: ['transaction.created', 'redeem.completed'] })
    await expect(emit(db, [txEvent('ok'), txEvent('bad', { amount: '1.50' })])).rejects.toThrow(
      /events\[1\] \(transaction.created\) does not match its shape.*amount/s,
    )
    await expect(emit(db, [txEvent('t', { timestamp: '2026-11-21T12:00:00Z' })])).rejects.toThrow(/timestamp/)
    await expect(emit(db, [{ type: 'redeem.completed', data: txEvent('d').data as never }])).rejects.toThrow(/completed redeem/)
    const [row] = await db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM webhook_events`)
    expect(row!.n).toBe(0)
  })
})
