import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import type { WebhookWorker } from '../../src/webhooks/worker.js'
import { testBackend, testDatabase } from '../support/db.js'
import { startReceiver, within, type Receiver } from './receiver.js'
import { clearWebhooks, emit, insertVaults, secondClient, serviceFor, shiftedClock, txEvent, workerFor } from './setup.js'

// Each endpoint is a lane of its own (src/webhooks/worker.ts): receivers that hang hold one request
// each and never the slots an answering receiver needs, and a failing endpoint's backoff holds back
// every delivery of that endpoint, new ones included. Real HTTP receivers on 127.0.0.1.

let db: Database
let other: Awaited<ReturnType<typeof secondClient>>
let healthy: Receiver
let hanging: Receiver
const workers: WebhookWorker[] = []
beforeAll(async () => {
  db = await testDatabase()
  other = await secondClient(db)
  await insertVaults(db, 'v1')
  healthy = await startReceiver()
})
afterAll(async () => {
  await healthy?.close()
  await other?.close()
  await db?.close()
})
beforeEach(async () => {
  await clearWebhooks(db)
  healthy.requests.length = 0
  healthy.maxInFlight.clear()
  healthy.respond = () => ({ status: 204 })
  hanging = await startReceiver(() => ({ status: 204, hang: true }))
})
afterEach(async () => {
  // The hanging requests end (connection reset) first, so the workers' stop() has nothing to wait for.
  await hanging.close()
  await Promise.all(workers.splice(0).map((w) => w.stop()))
})

async function endpoint(receiver: Receiver, path: string) {
  const { endpoint, secret } = await serviceFor(db).createEndpoint({ url: receiver.url(path), event_types: ['transaction.created'] })
  receiver.secrets.set(path, secret)
  return endpoint
}

describe(`webhook lanes (${testBackend})`, () => {
  it('8 receivers that never answer hold one request each; the answering one gets every delivery meanwhile (two instances, default concurrency)', async () => {
    const hangingPaths = Array.from({ length: 8 }, (_, i) => `/hang${i}`)
    for (const path of hangingPaths) await endpoint(hanging, path)
    await endpoint(healthy, '/ok')

    // A per-attempt timeout longer than the test: no hanging attempt ends while it runs, so any
    // slot they held would stay held.
    const options = { timeoutMs: 120_000, leaseMs: 130_000 }
    workers.push(workerFor(db, options), workerFor(other, options))
    for (const w of workers) w.start()

    // One event at a time, each only once the healthy receiver has the one before: the hanging
    // endpoints have an older delivery due all along.
    const events = 10
    for (let i = 0; i < events; i++) {
      await emit(db, [txEvent(`t${i}`)])
      expect(await within(30_000, () => healthy.requests.length === i + 1)).toBe(true)
    }

    const ids = await db.prisma.$queryRawUnsafe<{ id: string }[]>(`SELECT id::text AS id FROM webhook_events ORDER BY created_at, id`)
    expect(healthy.requests.map((r) => r.id).sort()).toEqual(ids.map((e) => e.id).sort())
    expect(healthy.requests.every((r) => r.verified)).toBe(true)
    expect(healthy.maxInFlight.get('/ok')).toBe(1)
    // Each hanging endpoint: its first delivery, one request, still open; nothing else sent to it.
    expect(await within(10_000, () => hanging.requests.length === 8)).toBe(true)
    for (const path of hangingPaths) {
      expect(hanging.requests.filter((r) => r.path === path).map((r) => r.id)).toEqual([ids[0]!.id])
      expect(hanging.maxInFlight.get(path)).toBe(1)
    }
    const states = () =>
      db.prisma.$queryRawUnsafe<{ succeeded: number; delivering: number; pending: number }[]>(
        `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
                count(*) FILTER (WHERE status = 'delivering')::int AS delivering, count(*) FILTER (WHERE status = 'pending')::int AS pending
         FROM webhook_deliveries`,
      )
    // The last healthy delivery is recorded just after its answer.
    expect(await within(10_000, async () => (await states())[0]!.succeeded === events)).toBe(true)
    expect(await states()).toEqual([{ succeeded: events, delivering: 8, pending: 8 * (events - 1) }])
  })

  it("a failed attempt closes the endpoint's lane: its new deliveries wait for the backoff too, and a success reopens it", async () => {
    const time = shiftedClock()
    const ep = await endpoint(healthy, '/flaky')
    const replies = [500, 500, 204, 204]
    healthy.respond = (_req, n) => ({ status: replies[n - 1] ?? 204 })
    // No jitter: 60 s after the endpoint's first failure in a row, 120 s after its second.
    const worker = workerFor(db, { clock: time.clock, retry: { baseMs: 60_000, capMs: 60 * 60_000, windowMs: 24 * 60 * 60_000, jitter: 0 } })

    await emit(db, [txEvent('t1')])
    const [first] = await worker.runOnce()
    expect(first).toMatchObject({ status: 'pending', statusCode: 500 })

    // A new event while the lane is closed: its delivery is due, and still not attempted.
    await emit(db, [txEvent('t2')])
    expect(await worker.runOnce()).toEqual([])
    expect(first!.endpointBackoffUntil).toEqual(first!.nextAttemptAt)
    time.advance(59_000)
    expect(await worker.runOnce()).toEqual([])
    expect(healthy.requests).toHaveLength(1)

    // The lane opens: one attempt (the delivery due the longest, t2's), which fails again.
    time.advance(2_000)
    const [second] = await worker.runOnce()
    expect(second).toMatchObject({ status: 'pending', statusCode: 500 })
    const [lane] = await db.prisma.$queryRawUnsafe<{ failure_streak: number; backoff_until: Date }[]>(
      `SELECT failure_streak, backoff_until FROM webhook_endpoints WHERE id = $1::uuid`,
      ep.id,
    )
    expect(lane!.failure_streak).toBe(2)
    expect(lane!.backoff_until.getTime() - second!.endpointBackoffUntil!.getTime()).toBe(0)
    // Second failure in a row: 120 s, although t1's own retry time has come meanwhile.
    expect(second!.endpointBackoffUntil!.getTime() - time.clock().getTime()).toBeGreaterThan(119_000)
    time.advance(60_000)
    expect(await worker.runOnce()).toEqual([])
    expect(healthy.requests).toHaveLength(2)

    time.advance(61_000)
    expect(await worker.runOnce()).toMatchObject([{ status: 'succeeded', endpointBackoffUntil: null }])
    // Reopened at once: the other delivery is sent in the very next round.
    expect(await worker.runOnce()).toMatchObject([{ status: 'succeeded' }])
    const data = (i: number) => (JSON.parse(healthy.requests[i]!.body) as { data: { id: string } }).data.id
    expect(healthy.requests.map((_, i) => data(i))).toEqual(['t1', 't2', 't1', 't2'])
    expect(await db.prisma.$queryRawUnsafe(`SELECT failure_streak, backoff_until FROM webhook_endpoints WHERE id = $1::uuid`, ep.id)).toEqual([
      { failure_streak: 0, backoff_until: null },
    ])
  })

  it("an operator's replay reopens a closed lane at once", async () => {
    const ep = await endpoint(healthy, '/replayed')
    healthy.respond = (_req, n) => ({ status: n === 1 ? 503 : 204 })
    const worker = workerFor(db, { retry: { baseMs: 60 * 60_000, capMs: 4 * 60 * 60_000, windowMs: 24 * 60 * 60_000, jitter: 0 } })
    await emit(db, [txEvent('t1')])
    const [failed] = await worker.runOnce()
    expect(failed).toMatchObject({ status: 'pending', statusCode: 503 })
    expect(await worker.runOnce()).toEqual([])

    await serviceFor(db).replayDelivery(ep.id, failed!.deliveryId)
    expect(await worker.runOnce()).toMatchObject([{ deliveryId: failed!.deliveryId, status: 'succeeded' }])
    expect(healthy.requests).toHaveLength(2)
  })
})
