import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import { emitEvents } from '../../src/webhooks/emit.js'
import { feedWakeups } from '../../src/webhooks/wakeups.js'
import { testDatabase } from '../support/db.js'
import { startReceiver, within, type Receiver } from './receiver.js'
import { attemptLog, clearWebhooks, deliveryOf, emit, insertVaults, feedOn, serviceFor, shiftedClock, txEvent, workerFor } from './setup.js'

// Delivery against a real HTTP receiver that verifies with the standardwebhooks package.

let db: Database
let receiver: Receiver
beforeAll(async () => {
  db = await testDatabase()
  await insertVaults(db, 'v1')
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver?.close()
  await db?.close()
})
beforeEach(async () => {
  await clearWebhooks(db)
  receiver.requests.length = 0
  receiver.respond = () => ({ status: 204 })
})

async function endpoint(path: string, eventTypes = ['transaction.created']) {
  const { endpoint, secret } = await serviceFor(db).createEndpoint({ url: receiver.url(path), event_types: eventTypes })
  receiver.secrets.set(path, secret)
  return endpoint
}

const on = (path: string) => receiver.requests.filter((r) => r.path === path)

describe('webhook delivery', () => {
  it('POSTs the event with Standard Webhooks headers that the standardwebhooks package verifies', async () => {
    const ep = await endpoint('/signed')
    await emit(db, [txEvent('t1')])
    const [event] = await db.prisma.$queryRawUnsafe<{ id: string; created_at: Date }[]>(`SELECT id::text AS id, created_at FROM webhook_events`)

    const outcomes = await workerFor(db).runOnce()

    expect(outcomes).toMatchObject([{ endpointId: ep.id, eventId: event!.id, attempt: 1, status: 'succeeded', statusCode: 204, error: null, recorded: true }])
    const [got] = on('/signed')
    expect(got).toMatchObject({ verified: true, id: event!.id })
    expect(got!.signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/)
    expect(Math.abs(Number(got!.timestamp) - Date.now() / 1000)).toBeLessThan(60)
    expect(JSON.parse(got!.body)).toEqual({
      type: 'transaction.created',
      timestamp: new Date(event!.created_at).toISOString(),
      data: {
        id: 't1',
        vault_id: 'v1',
        address: `0x${'a'.repeat(40)}`,
        type: 'deposit',
        status: 'completed',
        amount: '1500.25',
        shares: '1428.809523809523809524',
        timestamp: '2026-11-21T12:00:00.000Z',
        completed_at: '2026-11-21T12:00:00.000Z',
        tx_hash: `0x${'b'.repeat(64)}`,
      },
    })
    expect(got!.verifyResult).toEqual(JSON.parse(got!.body))
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'succeeded', attempts: 1, last_status_code: 204, last_error: null }])
    // The secret at rest is sealed: the database does not hold the signing key.
    const [stored] = await db.prisma.$queryRawUnsafe<{ secret: string }[]>(`SELECT secret FROM webhook_endpoints`)
    expect(stored!.secret).toMatch(/^v1\./)
    expect(stored!.secret).not.toContain(receiver.secrets.get('/signed')!.slice('whsec_'.length, 20))
  })

  it('a receiver that fails 3 times and then answers 2xx gets the event exactly once more, and nothing after', async () => {
    const ep = await endpoint('/flaky')
    receiver.respond = (_req, n) => (n <= 3 ? { status: 500, body: 'temporarily broken' } : { status: 200, body: 'ok' })
    const feed = feedOn(db)
    const worker = workerFor(db, { wakeups: feedWakeups(feed), idlePollMs: 20 })
    worker.start()
    try {
      await emit(db, [txEvent('t1')])
      expect(await within(15_000, async () => (await deliveryOf(db, ep.id))[0]?.status === 'succeeded')).toBe(true)
    } finally {
      await worker.stop()
      await feed.close()
    }
    const got = on('/flaky')
    expect(got).toHaveLength(4)
    expect(got.every((r) => r.verified)).toBe(true)
    expect(new Set(got.map((r) => r.id)).size).toBe(1)
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'succeeded', attempts: 4, last_status_code: 200, last_error: null }])
    expect(await attemptLog(db, ep.id)).toEqual([
      { attempt: 1, status_code: 500, error: 'HTTP 500' },
      { attempt: 2, status_code: 500, error: 'HTTP 500' },
      { attempt: 3, status_code: 500, error: 'HTTP 500' },
      { attempt: 4, status_code: 200, error: null },
    ])
    const [bodies] = await db.prisma.$queryRawUnsafe<{ b: string[] }[]>(`SELECT array_agg(response_body ORDER BY attempt) AS b FROM webhook_delivery_attempts`)
    expect(bodies!.b).toEqual(['temporarily broken', 'temporarily broken', 'temporarily broken', 'ok'])
    // Succeeded is final: nothing is due any more.
    expect(await workerFor(db).runOnce()).toEqual([])
    expect(on('/flaky')).toHaveLength(4)
  })

  it('a redirect is a failed attempt and is not followed', async () => {
    const ep = await endpoint('/moved')
    receiver.respond = (req) => (req.path === '/moved' ? { status: 307, headers: { location: receiver.url('/elsewhere') } } : { status: 204 })
    await emit(db, [txEvent('t1')])
    const [outcome] = await workerFor(db).runOnce()
    expect(outcome).toMatchObject({ status: 'pending', statusCode: 307, error: 'redirect (HTTP 307) not followed' })
    expect(on('/moved')).toHaveLength(1)
    expect(on('/elsewhere')).toHaveLength(0)
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'pending', attempts: 1, last_status_code: 307 }])
  })

  it('retries until the 24 h window closes, the last attempt at its end, then dead-letters', async () => {
    const time = shiftedClock()
    const day = 24 * 60 * 60_000
    const ep = await endpoint('/down')
    receiver.respond = () => ({ status: 503 })
    const worker = workerFor(db, { clock: time.clock, retry: { baseMs: 30_000, capMs: 4 * 60 * 60_000, windowMs: day, jitter: 0.2 } })
    await db.prisma.$transaction((tx) => emitEvents(tx, [txEvent('t1')], { clock: time.clock, retryWindowMs: day }))

    const [first] = await worker.runOnce()
    expect(first).toMatchObject({ status: 'pending', statusCode: 503, error: 'HTTP 503' })
    const [state] = await deliveryOf(db, ep.id)
    // The first retry waits 30 s ± 20 %.
    const wait = state!.next_attempt_at.getTime() - time.clock().getTime()
    expect(wait).toBeGreaterThan(23_000)
    expect(wait).toBeLessThanOrEqual(36_000)

    // Nothing is due before then.
    expect(await worker.runOnce()).toEqual([])

    // 20 s before the window closes, the next wait (60 s ± 20 %) would end after it: the next
    // attempt is put at the window's end instead.
    time.advance(day - 20_000)
    const [late] = await worker.runOnce()
    expect(late).toMatchObject({ status: 'pending', attempt: 2 })
    const [retryAt] = await deliveryOf(db, ep.id)
    expect(retryAt!.next_attempt_at).toEqual(retryAt!.retry_until)

    time.advance(20_000)
    const [last] = await worker.runOnce()
    expect(last).toMatchObject({ status: 'dead', attempt: 3, nextAttemptAt: null, error: 'HTTP 503' })
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'dead', attempts: 3, last_status_code: 503, last_error: 'HTTP 503' }])
    time.advance(day)
    expect(await worker.runOnce()).toEqual([])
    expect(on('/down')).toHaveLength(3)
  })

  it('a delivery claimed by an instance that dies is taken over by another once the lease runs out', async () => {
    const time = shiftedClock()
    const ep = await endpoint('/takeover')
    await emit(db, [txEvent('t1')])
    const doomed = workerFor(db, { clock: time.clock })
    const survivor = workerFor(db, { clock: time.clock })

    // The doomed instance commits its claim and dies before sending anything.
    const [claimed] = await doomed.claim()
    expect(claimed).toMatchObject({ endpointId: ep.id, attempt: 1 })
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'delivering', attempts: 1 }])

    // While its lease lasts, nobody else touches the endpoint.
    time.advance(14_000)
    expect(await survivor.runOnce()).toEqual([])
    expect(on('/takeover')).toHaveLength(0)

    // After it, the survivor sends it.
    time.advance(1_001)
    expect(await survivor.runOnce()).toMatchObject([{ endpointId: ep.id, attempt: 2, status: 'succeeded', recorded: true }])
    expect(on('/takeover')).toHaveLength(1)
    expect(await attemptLog(db, ep.id)).toEqual([
      { attempt: 1, status_code: null, error: 'abandoned: no result within the lease (the delivering instance stopped or lost its database)' },
      { attempt: 2, status_code: 204, error: null },
    ])

    // Should the doomed one come back and finish late, its result is not recorded over the survivor's.
    const late = await doomed.deliver(claimed!)
    expect(late.recorded).toBe(false)
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'succeeded', attempts: 2, last_status_code: 204 }])
    expect(new Set(on('/takeover').map((r) => r.id)).size).toBe(1)
  })

  it('wakes on the commit of new events (no polling needed)', async () => {
    const ep = await endpoint('/wake')
    const feed = feedOn(db)
    // An idle poll far longer than the test: only the notification can start the delivery.
    const worker = workerFor(db, { wakeups: feedWakeups(feed), idlePollMs: 10 * 60_000 })
    worker.start()
    try {
      await feed.ready
      expect(feed.live).toBe(true)
      // Let the first round (which finds nothing) finish, so the worker is idle when the event comes.
      await new Promise((r) => setTimeout(r, 100))
      await emit(db, [txEvent('t1')])
      expect(await within(10_000, () => on('/wake').length === 1)).toBe(true)
    } finally {
      await worker.stop()
      await feed.close()
    }
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'succeeded' }])
  })

  it('stops only after the deliveries in flight are recorded', async () => {
    const ep = await endpoint('/drain')
    receiver.respond = () => ({ status: 200, delayMs: 300 })
    await emit(db, [txEvent('t1')])
    const worker = workerFor(db)
    worker.start()
    expect(await within(5000, () => on('/drain').length === 1)).toBe(true)
    await worker.stop()
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'succeeded', attempts: 1, last_status_code: 200 }])
  })

  it('refuses to send to a private address unless private addresses are allowed, and records why', async () => {
    const ep = await endpoint('/private')
    await emit(db, [txEvent('t1')])
    const guarded = workerFor(db, { policy: { requireHttps: false, allowPrivate: false } })
    expect(await guarded.runOnce()).toMatchObject([{ status: 'pending', statusCode: null, error: 'refused: 127.0.0.1 is not a public address.' }])
    expect(on('/private')).toHaveLength(0)
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'pending', last_error: 'refused: 127.0.0.1 is not a public address.' }])
  })

  it('gives up on a receiver that does not answer within the timeout', async () => {
    const ep = await endpoint('/slow')
    receiver.respond = () => ({ status: 200, hang: true })
    await emit(db, [txEvent('t1')])
    // The production timeout is 10 s; the lease must exceed it by 5 s.
    const worker = workerFor(db, { timeoutMs: 300, leaseMs: 5_300 })
    expect(await worker.runOnce()).toMatchObject([{ status: 'pending', statusCode: null, error: 'no response within 0.3 s' }])
    expect(await deliveryOf(db, ep.id)).toMatchObject([{ status: 'pending', attempts: 1, last_error: 'no response within 0.3 s' }])
  })
})
