import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import { AppError } from '../../src/core/errors.js'
import { createSecretBox } from '../../src/webhooks/secrets.js'
import { createWebhookService } from '../../src/webhooks/service.js'
import { testDatabase } from '../support/db.js'
import { startReceiver, type Receiver } from './receiver.js'
import { clearWebhooks, deliveryOf, drain, emit, insertVaults, serviceFor, txEvent, workerFor } from './setup.js'

// The operations behind the admin routes: endpoints (the secret shown once), deliveries with their
// attempts (keyset-paged), replays.

let db: Database
let receiver: Receiver
beforeAll(async () => {
  db = await testDatabase()
  await insertVaults(db, 'v1', 'v2')
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

async function failure(work: Promise<unknown>): Promise<{ code: string; status: number; message: string }> {
  try {
    await work
  } catch (e) {
    if (e instanceof AppError) return { code: e.code, status: e.status, message: e.message }
    throw e
  }
  throw new Error('expected a failure')
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

describe('webhook endpoints', () => {
  it('are created with a secret shown once, then listed, read and deleted without it', async () => {
    const service = serviceFor(db)
    const created = await service.createEndpoint({
      url: 'https://hooks.example.com/vaultgate?token=abc',
      event_types: ['vault.updated', 'redeem.completed', 'vault.updated'],
      vault_ids: ['v2'],
    })
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(created.endpoint).toEqual({
      id: expect.stringMatching(UUID),
      url: 'https://hooks.example.com/vaultgate?token=abc',
      event_types: ['vault.updated', 'redeem.completed'],
      vault_ids: ['v2'],
      created_at: expect.stringMatching(ISO),
      disabled_at: null,
    })
    const all = (await service.createEndpoint({ url: 'http://127.0.0.1:9/all', event_types: ['transaction.created'] })).endpoint
    expect(all.vault_ids).toBeNull()

    expect(await service.listEndpoints()).toEqual([created.endpoint, all])
    expect(await service.getEndpoint(created.endpoint.id)).toEqual(created.endpoint)
    expect(JSON.stringify(await service.listEndpoints())).not.toContain('whsec_')

    await service.deleteEndpoint(created.endpoint.id)
    expect(await service.listEndpoints()).toEqual([all])
    expect(await failure(service.getEndpoint(created.endpoint.id))).toEqual({
      code: 'not_found',
      status: 404,
      message: `No webhook endpoint with id ${created.endpoint.id}.`,
    })
    expect(await failure(service.deleteEndpoint(created.endpoint.id))).toMatchObject({ code: 'not_found' })
    expect(await failure(service.getEndpoint('nope'))).toEqual({ code: 'not_found', status: 404, message: 'No webhook endpoint with id "nope".' })
  })

  it.each([
    [{}, 'url: is required'],
    [{ url: 'https://x.example/h' }, 'event_types: is required'],
    [{ url: 'https://x.example/h', event_types: [] }, 'event_types: must name at least one event type'],
    [
      { url: 'https://x.example/h', event_types: ['vault.deleted'] },
      'event_types[0]: must be one of vault.updated, transaction.created, transaction.status_changed, redeem.claimable, redeem.completed, transaction.removed',
    ],
    [{ url: 'https://x.example/h', event_types: 'vault.updated' }, 'event_types: must be an array'],
    [{ url: 'https://x.example/h', event_types: ['vault.updated'], vault_ids: [] }, 'vault_ids: must name at least one vault (leave it out for every vault)'],
    [{ url: 'https://x.example/h', event_types: ['vault.updated'], vault_ids: ['v1', 'nope'] }, 'vault_ids: no vault with id "nope".'],
    [{ url: 'https://x.example/h', event_types: ['vault.updated'], vault: 'v1' }, 'vault: is not a known field (url, event_types, vault_ids)'],
    [{ url: 'ftp://x.example/h', event_types: ['vault.updated'] }, 'url: The URL must use https (or http outside production).'],
    [{ url: 'http://10.0.0.8/h', event_types: ['vault.updated'] }, 'url: 10.0.0.8 is not a public address.'],
    [{ url: 'http://localhost:4000/h', event_types: ['vault.updated'] }, 'url: localhost is a loopback name.'],
    ['not an object', 'body: must be a JSON object'],
  ])('refuses %j with a bad_request naming the field', async (input, message) => {
    const service = serviceFor(db, { requireHttps: false, allowPrivate: false })
    expect(await failure(service.createEndpoint(input))).toEqual({ code: 'bad_request', status: 400, message })
    expect(await service.listEndpoints()).toEqual([])
  })

  it('must be https in production', async () => {
    const service = serviceFor(db, { requireHttps: true, allowPrivate: false })
    expect(await failure(service.createEndpoint({ url: 'http://hooks.example.com/h', event_types: ['vault.updated'] }))).toMatchObject({
      message: 'url: The URL must use https in production.',
    })
  })

  it('when disabled receive no new events and are not sent to; enabled again they are', async () => {
    const service = serviceFor(db)
    const { endpoint, secret } = await service.createEndpoint({ url: receiver.url('/off'), event_types: ['transaction.created'] })
    receiver.secrets.set('/off', secret)
    await emit(db, [txEvent('before')])
    expect((await service.setDisabled(endpoint.id, true)).disabled_at).toMatch(ISO)
    expect(await emit(db, [txEvent('while-off')])).toEqual({ events: 0, deliveries: 0 })
    expect(await workerFor(db).runOnce()).toEqual([])
    expect((await service.setDisabled(endpoint.id, false)).disabled_at).toBeNull()
    expect(await workerFor(db).runOnce()).toMatchObject([{ status: 'succeeded' }])
    expect(receiver.requests.map((r) => JSON.parse(r.body).data.id)).toEqual(['before'])
  })

  it('keep working after the sealing key is rotated and the secrets resealed', async () => {
    const oldBox = createSecretBox([Buffer.alloc(32, 7)])
    const rotated = createSecretBox([Buffer.alloc(32, 8), Buffer.alloc(32, 7)])
    const { endpoint, secret } = await createWebhookService({
      prisma: db.prisma,
      secrets: oldBox,
      policy: { requireHttps: false, allowPrivate: true },
    }).createEndpoint({
      url: receiver.url('/rotated'),
      event_types: ['transaction.created'],
    })
    receiver.secrets.set('/rotated', secret)
    expect(await createWebhookService({ prisma: db.prisma, secrets: rotated, policy: { requireHttps: false, allowPrivate: true } }).resealSecrets()).toBe(1)
    const newOnly = createSecretBox([Buffer.alloc(32, 8)])
    await emit(db, [txEvent('t1')])
    expect(await workerFor(db, { secrets: newOnly }).runOnce()).toMatchObject([{ endpointId: endpoint.id, status: 'succeeded' }])
    expect(receiver.requests).toMatchObject([{ verified: true }])
  })
})

describe('webhook deliveries', () => {
  async function deliveredEndpoint(path: string, events: number) {
    const service = serviceFor(db)
    const { endpoint, secret } = await service.createEndpoint({ url: receiver.url(path), event_types: ['transaction.created'] })
    receiver.secrets.set(path, secret)
    for (let i = 0; i < events; i++) await emit(db, [txEvent(`${path}-${i}`)])
    return { service, endpoint }
  }

  it('are listed newest first with every attempt, page by page', async () => {
    const { service, endpoint } = await deliveredEndpoint('/list', 3)
    receiver.respond = (_r, n) => (n === 1 ? { status: 500, body: 'boom' } : { status: 204 })
    await drain(db, workerFor(db))

    const first = await service.listDeliveries(endpoint.id, { limit: 2 })
    expect(first.items).toHaveLength(2)
    expect(first.next_cursor).toEqual(expect.any(String))
    const second = await service.listDeliveries(endpoint.id, { limit: 2, cursor: first.next_cursor! })
    expect(second.items).toHaveLength(1)
    expect(second.next_cursor).toBeNull()
    const items = [...first.items, ...second.items]
    expect(items.map((d) => d.created_at)).toEqual([...items.map((d) => d.created_at)].sort().reverse())

    const retried = items.find((d) => d.attempt_count === 2)!
    expect(retried).toEqual({
      id: expect.stringMatching(UUID),
      event_id: expect.stringMatching(UUID),
      event_type: 'transaction.created',
      vault_id: 'v1',
      status: 'succeeded',
      attempt_count: 2,
      next_attempt_at: null,
      retry_until: expect.stringMatching(ISO),
      last_status_code: 204,
      last_error: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      succeeded_at: expect.stringMatching(ISO),
      dead_at: null,
      attempts: [
        { attempt: 1, started_at: expect.stringMatching(ISO), duration_ms: expect.any(Number), status_code: 500, error: 'HTTP 500', response_body: 'boom' },
        { attempt: 2, started_at: expect.stringMatching(ISO), duration_ms: expect.any(Number), status_code: 204, error: null, response_body: null },
      ],
    })
    expect(items.filter((d) => d.attempt_count === 1)).toHaveLength(2)

    expect((await service.listDeliveries(endpoint.id, { status: 'succeeded' })).items).toHaveLength(3)
    expect((await service.listDeliveries(endpoint.id, { status: 'dead' })).items).toEqual([])
  })

  it('refuse bad paging input', async () => {
    const { service, endpoint } = await deliveredEndpoint('/paging', 3)
    const other = (await service.createEndpoint({ url: receiver.url('/other'), event_types: ['transaction.created'] })).endpoint
    const page = await service.listDeliveries(endpoint.id, { limit: 1 })
    expect(await failure(service.listDeliveries(other.id, { cursor: page.next_cursor! }))).toMatchObject({
      code: 'bad_request',
      message: 'cursor was issued for a different endpoint or status filter; start again from the first page.',
    })
    expect(await failure(service.listDeliveries(endpoint.id, { cursor: page.next_cursor!, status: 'dead' }))).toMatchObject({ code: 'bad_request' })
    expect(await failure(service.listDeliveries(endpoint.id, { cursor: 'garbage' }))).toMatchObject({ code: 'bad_request' })
    expect(await failure(service.listDeliveries(endpoint.id, { limit: 0 }))).toEqual({
      code: 'bad_request',
      status: 400,
      message: 'limit must be an integer from 1 to 200.',
    })
    expect(await failure(service.listDeliveries(endpoint.id, { limit: 201 }))).toMatchObject({ code: 'bad_request' })
    expect(await failure(service.listDeliveries(endpoint.id, { status: 'lost' }))).toEqual({
      code: 'bad_request',
      status: 400,
      message: 'status must be one of pending, delivering, succeeded, dead.',
    })
    expect(await failure(service.listDeliveries('6f1c1c1e-7f0a-4c1b-9d55-0d6f3c1a2b3c'))).toMatchObject({ code: 'not_found' })
  })

  it('can be replayed: the same event (same webhook-id) is sent again, with a fresh retry window', async () => {
    const { service, endpoint } = await deliveredEndpoint('/replay', 1)
    const worker = workerFor(db)
    await worker.runOnce()
    const [delivery] = (await service.listDeliveries(endpoint.id)).items
    expect(delivery!.status).toBe('succeeded')

    const replayed = await service.replayDelivery(endpoint.id, delivery!.id)
    expect(replayed).toMatchObject({
      status: 'pending',
      attempt_count: 1,
      next_attempt_at: expect.stringMatching(ISO),
      succeeded_at: expect.stringMatching(ISO),
    })
    expect(await worker.runOnce()).toMatchObject([{ deliveryId: delivery!.id, attempt: 2, status: 'succeeded' }])
    expect(receiver.requests).toHaveLength(2)
    expect(receiver.requests[1]!.id).toBe(receiver.requests[0]!.id)
    expect(receiver.requests[1]!.body).toBe(receiver.requests[0]!.body)

    expect(await failure(service.replayDelivery(endpoint.id, '6f1c1c1e-7f0a-4c1b-9d55-0d6f3c1a2b3c'))).toMatchObject({ code: 'not_found' })
  })

  it('a dead delivery replayed starts its backoff afresh', async () => {
    const { service, endpoint } = await deliveredEndpoint('/dead', 1)
    await db.prisma.$executeRawUnsafe(`UPDATE webhook_deliveries SET status = 'dead', attempts = 15, dead_at = now(), retry_until = now()`)
    const [dead] = (await service.listDeliveries(endpoint.id)).items
    await service.replayDelivery(endpoint.id, dead!.id)
    receiver.respond = () => ({ status: 502 })
    const [outcome] = await workerFor(db, { retry: { baseMs: 30_000, capMs: 4 * 60 * 60_000, windowMs: 24 * 60 * 60_000, jitter: 0 } }).runOnce()
    // Failure 1 of the new window: 30 s, not the 4 h of a 16th failure.
    expect(outcome).toMatchObject({ attempt: 16, status: 'pending' })
    expect(outcome!.nextAttemptAt!.getTime() - Date.now()).toBeGreaterThan(20_000)
    expect(outcome!.nextAttemptAt!.getTime() - Date.now()).toBeLessThanOrEqual(30_000)
    // A fresh window (the service's: 60 s in these tests) from the replay on.
    const [state] = await deliveryOf(db, endpoint.id)
    expect(state!.retry_until.getTime() - Date.now()).toBeGreaterThan(50_000)
  })

  it('an event can be replayed to every subscribed endpoint, or to one, including an endpoint created after it', async () => {
    const service = serviceFor(db)
    const first = await service.createEndpoint({ url: receiver.url('/first'), event_types: ['transaction.created'] })
    receiver.secrets.set('/first', first.secret)
    await emit(db, [txEvent('t1')])
    const worker = workerFor(db)
    await worker.runOnce()
    const [delivery] = (await service.listDeliveries(first.endpoint.id)).items
    const late = await service.createEndpoint({ url: receiver.url('/late'), event_types: ['transaction.created'], vault_ids: ['v1'] })
    receiver.secrets.set('/late', late.secret)
    const elsewhere = await service.createEndpoint({ url: receiver.url('/elsewhere'), event_types: ['transaction.created'], vault_ids: ['v2'] })

    expect(await service.replayEvent(delivery!.event_id, late.endpoint.id)).toEqual({ deliveries: 1 })
    expect(await worker.runOnce()).toMatchObject([{ endpointId: late.endpoint.id, status: 'succeeded' }])

    expect(await service.replayEvent(delivery!.event_id)).toEqual({ deliveries: 2 })
    expect((await worker.runOnce()).map((o) => o.endpointId).sort()).toEqual([first.endpoint.id, late.endpoint.id].sort())
    expect(receiver.requests.map((r) => r.path).sort()).toEqual(['/first', '/first', '/late', '/late'])
    expect(new Set(receiver.requests.map((r) => r.id)).size).toBe(1)
    expect(receiver.requests.every((r) => r.verified)).toBe(true)

    expect(await failure(service.replayEvent(delivery!.event_id, elsewhere.endpoint.id))).toMatchObject({
      code: 'bad_request',
      message: `Webhook endpoint ${elsewhere.endpoint.id} is disabled or does not subscribe to this event (transaction.created of its vault).`,
    })
    expect(await failure(service.replayEvent('6f1c1c1e-7f0a-4c1b-9d55-0d6f3c1a2b3c'))).toMatchObject({ code: 'not_found' })
  })
})
