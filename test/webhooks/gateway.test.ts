import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { ImportTransaction } from '../../src/importer/document.js'
import { WEBHOOK_EVENT_TYPES } from '../../src/webhooks/events.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { bareVault, fullVault } from '../support/explorer-data.js'
import { ADMIN_TOKEN } from '../support/keys.js'
import { startReceiver, within, type Receiver } from './receiver.js'

// The webhooks as an operator and an integrator meet them: endpoints registered at /admin/webhooks,
// events caused by an import through /admin/import, delivered by the gateway's own worker to a real
// receiver that verifies them with the standardwebhooks package, and the delivery log at
// /admin/webhooks/{id}/deliveries.

const WALLET = '0x00000000000000000000000000000000000000a1'
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
const jsonInit = (method: string, body?: unknown): RequestInit => ({
  method,
  headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
  body: body === undefined ? undefined : JSON.stringify(body),
})

const tx = (id: string, over: Partial<ImportTransaction> = {}): ImportTransaction => ({
  id,
  vault_id: fullVault.id,
  address: WALLET,
  type: 'deposit',
  status: 'completed',
  amount: '250',
  shares: '240.5',
  timestamp: '2026-11-21T10:00:00.000Z',
  completed_at: '2026-11-21T10:00:00.000Z',
  tx_hash: `0x${'d'.repeat(64)}`,
  ...over,
})

let t: TestApp
let receiver: Receiver
beforeAll(async () => {
  t = await createTestApp({ ADMIN_TOKEN, WEBHOOK_WORKER: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '50' })
  receiver = await startReceiver()
  await importThrough({ vaults: [fullVault, bareVault] })
})
afterAll(async () => {
  await t?.close()
  await receiver?.close()
})
beforeEach(async () => {
  await t.db.prisma.$executeRawUnsafe('DELETE FROM webhook_endpoints')
  await t.db.prisma.$executeRawUnsafe('DELETE FROM webhook_events')
  await t.db.prisma.$executeRawUnsafe('DELETE FROM transactions')
  receiver.requests.length = 0
  receiver.respond = () => ({ status: 204 })
})

async function importThrough(doc: unknown) {
  const res = await t.request('/admin/import', jsonInit('POST', doc))
  expect(res.status).toBe(200)
  return res.json()
}

async function register(path: string, body: Record<string, unknown> = {}) {
  const res = await t.request('/admin/webhooks', jsonInit('POST', { url: receiver.url(path), event_types: [...WEBHOOK_EVENT_TYPES], ...body }))
  expect(res.status).toBe(201)
  expect(res.headers.get('cache-control')).toBe('no-store')
  const { data } = (await res.json()) as { data: { id: string; secret: string } }
  receiver.secrets.set(path, data.secret)
  return data
}

const on = (path: string) => receiver.requests.filter((r) => r.path === path)
const deliveries = async (id: string, query = '') => (await (await t.request(`/admin/webhooks/${id}/deliveries${query}`, jsonInit('GET'))).json()) as any

describe(`webhooks through the gateway (${testBackend})`, () => {
  it('delivers the events of an import through the admin route to a real receiver, verified, each exactly once', async () => {
    const all = await register('/all')
    expect(all).toMatchObject({ url: receiver.url('/all'), event_types: [...WEBHOOK_EVENT_TYPES], vault_ids: null, disabled_at: null })
    expect(all.secret).toMatch(/^whsec_/)
    const onlyBare = await register('/bare', { event_types: ['vault.updated'], vault_ids: [bareVault.id] })

    await importThrough({
      vaults: [{ ...fullVault, tvl: '1300000' }, bareVault],
      transactions: [tx('t1'), tx('t2', { type: 'redeem', status: 'pending', completed_at: null })],
    })
    expect(await within(10_000, () => on('/all').length >= 3)).toBe(true)
    // An import that changes nothing more emits nothing more; the status change afterwards emits two.
    await importThrough({ vaults: [{ ...fullVault, tvl: '1300000' }, bareVault], transactions: [tx('t1')] })
    await importThrough({ transactions: [tx('t2', { type: 'redeem', status: 'completed', completed_at: '2026-11-22T10:00:00.000Z' })] })
    expect(await within(10_000, () => on('/all').length >= 5)).toBe(true)
    // The receiver answers before the worker records the attempt: every delivery ends succeeded.
    const unsettled = async () =>
      (await t.db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'succeeded'`))[0]!.n
    expect(await within(10_000, async () => (await unsettled()) === 0)).toBe(true)

    const got = on('/all')
    expect(got.every((r) => r.verified)).toBe(true)
    expect(new Set(got.map((r) => r.id)).size).toBe(got.length)
    const bodies = got.map((r) => JSON.parse(r.body) as { type: string; timestamp: string; data: Record<string, unknown> })
    const summary = bodies.map((b) => `${b.type} ${b.data.id ?? b.data.vault_id}`).sort()
    expect(summary).toEqual([
      'redeem.completed t2',
      'transaction.created t1',
      'transaction.created t2',
      'transaction.status_changed t2',
      `vault.updated ${fullVault.id}`,
    ])
    expect(bodies.find((b) => b.type === 'transaction.status_changed')).toEqual({
      type: 'transaction.status_changed',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: {
        id: 't2',
        vault_id: fullVault.id,
        address: WALLET,
        type: 'redeem',
        status: 'completed',
        amount: '250',
        shares: '240.5',
        timestamp: '2026-11-21T10:00:00.000Z',
        completed_at: '2026-11-22T10:00:00.000Z',
        tx_hash: `0x${'d'.repeat(64)}`,
        previous_status: 'pending',
      },
    })
    expect(bodies.find((b) => b.type === 'vault.updated')!.data).toEqual({
      vault_id: fullVault.id,
      status: 'active',
      tvl: '1300000',
      share_price: '1.0425',
      changes: ['values'],
    })
    // The bare vault's record did not change, so its subscriber heard nothing.
    expect(on('/bare')).toEqual([])

    // The delivery log: newest first, each with its attempts.
    const page = await deliveries(all.id, '?limit=2')
    expect(page.status).toBe('ok')
    expect(page.data.items).toHaveLength(2)
    expect(page.data.items[0]).toMatchObject({ status: 'succeeded', attempt_count: 1, last_status_code: 204, next_attempt_at: null })
    expect(page.data.items[0].attempts).toMatchObject([{ attempt: 1, status_code: 204, error: null }])
    const rest = await deliveries(all.id, `?limit=200&cursor=${encodeURIComponent(page.data.next_cursor)}`)
    expect(rest.data.items).toHaveLength(3)
    expect(rest.data.next_cursor).toBeNull()
    expect((await t.request(`/admin/webhooks/${all.id}/deliveries?cursor=forged`, jsonInit('GET'))).status).toBe(400)

    const listed = await (await t.request('/admin/webhooks', jsonInit('GET'))).json()
    expect(listed.data.items.map((e: { id: string }) => e.id)).toEqual([all.id, onlyBare.id])
    expect(JSON.stringify(listed)).not.toContain('whsec_')
    expect((await t.request(`/admin/webhooks/${onlyBare.id}`, jsonInit('DELETE'))).status).toBe(200)
    expect((await t.request(`/admin/webhooks/${onlyBare.id}`, jsonInit('GET'))).status).toBe(404)
  })

  it('does not follow a redirect: the attempt fails, is logged, and a replay after the fix delivers the same event', async () => {
    const ep = await register('/moved', { event_types: ['transaction.created'] })
    receiver.respond = (r) => (r.path === '/moved' ? { status: 307, headers: { location: receiver.url('/elsewhere') } } : { status: 204 })
    await importThrough({ transactions: [tx('t1')] })
    expect(await within(10_000, async () => (await deliveries(ep.id)).data.items[0]?.attempts.length >= 1)).toBe(true)
    const [delivery] = (await deliveries(ep.id)).data.items
    expect(delivery.attempts[0]).toMatchObject({ status_code: 307, error: 'redirect (HTTP 307) not followed' })
    expect(on('/elsewhere')).toEqual([])

    receiver.respond = () => ({ status: 200 })
    const replay = await t.request(`/admin/webhooks/${ep.id}/deliveries/${delivery.id}/replay`, jsonInit('POST'))
    expect(replay.status).toBe(200)
    expect(await within(10_000, async () => (await deliveries(ep.id)).data.items[0].status === 'succeeded')).toBe(true)
    const ids = new Set(on('/moved').map((r) => r.id))
    expect(ids).toEqual(new Set([delivery.event_id]))
    expect(on('/elsewhere')).toEqual([])
  })

  it('refuses endpoints on private addresses unless WEBHOOK_ALLOW_PRIVATE is true', async () => {
    const guarded = await createTestApp({ ADMIN_TOKEN })
    try {
      for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://[::1]/hook', 'http://10.0.0.7/hook', 'http://169.254.169.254/latest']) {
        const res = await guarded.request('/admin/webhooks', jsonInit('POST', { url, event_types: ['vault.updated'] }))
        expect(res.status, url).toBe(400)
        const body = (await res.json()) as { error: { code: string; message: string } }
        expect(body.error.code).toBe('bad_request')
        expect(body.error.message, url).toMatch(/^url: .*(is not a public address|is a loopback name)\.$/)
      }
    } finally {
      await guarded.close()
    }
  })

  it('answers bad input with the field that is wrong and unknown ids with 404', async () => {
    const cases: [RequestInit, string, number, RegExp][] = [
      [jsonInit('POST', { url: 'ftp://x.example/h', event_types: ['vault.updated'] }), '/admin/webhooks', 400, /^url: /],
      [jsonInit('POST', { url: 'https://x.example/h', event_types: ['vault.exploded'] }), '/admin/webhooks', 400, /^event_types\[0\]: must be one of/],
      [jsonInit('POST', { url: 'https://x.example/h', event_types: ['vault.updated'], vault_ids: ['nope'] }), '/admin/webhooks', 400, /vault_ids: no vault/],
      [{ ...jsonInit('POST'), body: '{', headers: { ...auth, 'content-type': 'application/json' } }, '/admin/webhooks', 400, /not valid JSON/],
      [jsonInit('GET'), '/admin/webhooks/00000000-0000-4000-8000-000000000000', 404, /No webhook endpoint/],
      [jsonInit('GET'), '/admin/webhooks/not-a-uuid/deliveries', 404, /No webhook endpoint/],
      [jsonInit('GET'), '/admin/webhooks/00000000-0000-4000-8000-000000000000/deliveries?limit=0', 400, /limit must be an integer from 1 to 200/],
      [jsonInit('POST'), '/admin/webhooks/events/00000000-0000-4000-8000-000000000000/replay', 404, /No webhook event/],
      [{ method: 'GET' }, '/admin/webhooks', 401, /admin token/],
    ]
    for (const [init, path, status, message] of cases) {
      const res = await t.request(path, init)
      expect(res.status, `${init.method} ${path}`).toBe(status)
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(message)
    }
  })
})
