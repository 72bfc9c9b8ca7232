import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import type { DeliveryOutcome, WebhookWorker } from '../../src/webhooks/worker.js'
import { testBackend, testDatabase } from '../support/db.js'
import { startReceiver, type Receiver } from './receiver.js'
import { clearWebhooks, emit, insertVaults, secondClient, serviceFor, txEvent, workerFor } from './setup.js'

// Two instances (two workers on two Prisma clients; on PostgreSQL two connection pools, so the
// claims really race) share the deliveries: every event reaches every endpoint exactly once, and
// no endpoint ever has two requests in flight, even though each worker would take several
// deliveries at once if it were allowed to.

let db: Database
let other: Awaited<ReturnType<typeof secondClient>>
let receiver: Receiver
beforeAll(async () => {
  db = await testDatabase()
  other = await secondClient(db)
  await insertVaults(db, 'v1')
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver?.close()
  await other?.close()
  await db?.close()
})
beforeEach(async () => {
  await clearWebhooks(db)
  receiver.requests.length = 0
  receiver.maxInFlight.clear()
})

async function endpoints(n: number) {
  const service = serviceFor(db)
  const list = []
  for (let i = 0; i < n; i++) {
    const path = `/e${i}`
    const { endpoint, secret } = await service.createEndpoint({ url: receiver.url(path), event_types: ['transaction.created'] })
    receiver.secrets.set(path, secret)
    list.push({ ...endpoint, path })
  }
  return list
}

async function pendingCount(): Promise<number> {
  const [row] = await db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'succeeded'`)
  return row!.n
}

describe(`two instances (${testBackend})`, () => {
  it('never deliver to one endpoint concurrently, and deliver every event exactly once', async () => {
    const eps = await endpoints(3)
    const events = 12
    await emit(
      db,
      Array.from({ length: events }, (_, i) => txEvent(`t${i}`)),
    )
    // Each answer takes a while, so overlapping requests would be seen if they were made.
    receiver.respond = () => ({ status: 200, delayMs: 25 })

    const workers: WebhookWorker[] = [workerFor(db, { concurrency: 2 }), workerFor(other, { concurrency: 2 })]
    const outcomes: DeliveryOutcome[][] = [[], []]
    let done = false
    const drive = async (i: number) => {
      while (!done) {
        const round = await workers[i]!.runOnce()
        outcomes[i]!.push(...round)
        if (round.length === 0) await new Promise((r) => setTimeout(r, 2))
      }
    }
    const running = [drive(0), drive(1)]
    const deadline = Date.now() + 30_000
    while ((await pendingCount()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    done = true
    await Promise.all(running)

    expect(await pendingCount()).toBe(0)
    for (const ep of eps) {
      expect(receiver.maxInFlight.get(ep.path)).toBe(1)
      const got = receiver.requests.filter((r) => r.path === ep.path)
      expect(got).toHaveLength(events)
      expect(new Set(got.map((r) => r.id)).size).toBe(events)
      expect(got.every((r) => r.verified)).toBe(true)
    }
    // The endpoints were served in parallel, and both instances took part.
    expect(receiver.maxInFlightOverall()).toBeGreaterThan(1)
    expect(outcomes[0]!.length).toBeGreaterThan(0)
    expect(outcomes[1]!.length).toBeGreaterThan(0)
    expect(outcomes[0]!.length + outcomes[1]!.length).toBe(3 * events)
  })

  it('racing claims never hand one endpoint to both instances', async () => {
    const eps = await endpoints(6)
    await emit(
      db,
      Array.from({ length: 3 }, (_, i) => txEvent(`t${i}`)),
    )
    const a = workerFor(db)
    const b = workerFor(other)
    for (let round = 0; round < 3; round++) {
      const [fromA, fromB] = await Promise.all([a.claim(6), b.claim(6)])
      const endpointsA = fromA.map((c) => c.endpointId)
      const endpointsB = fromB.map((c) => c.endpointId)
      // Each endpoint has a due delivery in every round; together the two claims take each once.
      expect([...endpointsA, ...endpointsB].sort()).toEqual(eps.map((e) => e.id).sort())
      expect(new Set(endpointsA).size).toBe(endpointsA.length)
      // A second claim while those are held finds nothing.
      expect(await a.claim(6)).toEqual([])
      await Promise.all([...fromA.map((c) => a.deliver(c)), ...fromB.map((c) => b.deliver(c))])
    }
    expect(await pendingCount()).toBe(0)
  })
})
