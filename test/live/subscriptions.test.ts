import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { listen, liveTransaction, liveVault } from '../support/live.js'
import { subscribe, type Subscription } from '../support/sse.js'
import { eventually } from '../support/eventually.js'

// GraphQL subscriptions over SSE (docs/spec/decisions.md §11, docs/push.md), over real
// HTTP: what a subscriber receives after an import, what is refused, and what an open stream
// costs once it is gone.

const ADMIN = 'admin-token-for-live-tests-0123456789abcdef'
const ALICE = '0xa11ce00000000000000000000000000000000001'
const BOB = '0xb0b0000000000000000000000000000000000002'

const VAULT_UPDATED = 'subscription($id: ID!) { vaultUpdated(id: $id) { id tvl sharePrice status } }'
const WALLET_ACTIVITY = 'subscription($address: String!) { walletActivity(address: $address) { id vaultId type status amount } }'

describe(`subscriptions over SSE (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  const open: Subscription[] = []
  const sub = async (query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) => {
    const s = await subscribe(fetch, `${base}/graphql`, query, variables, headers)
    open.push(s)
    return s
  }
  /** Imports through the admin route, as an operator would. */
  const adminImport = async (doc: object) => {
    const res = await fetch(`${base}/admin/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(doc),
    })
    expect(res.status).toBe(200)
  }
  /** Until the subscriptions' registrations are gone (the server notices a disconnect when its socket closes). */
  /** `open` streams, and the hub `listeners` they share (one per operation and variables: src/graphql/shared-subscriptions.ts). */
  const settled = async (listeners: number, open = listeners) => {
    for (let i = 0; i < 200 && (t.app.subscriptions.listeners !== listeners || t.app.subscriptions.open !== open); i++)
      await new Promise((r) => setTimeout(r, 10))
    return { listeners: t.app.subscriptions.listeners, open: t.app.subscriptions.open }
  }

  beforeAll(async () => {
    t = await createTestApp({
      ADMIN_TOKEN: ADMIN,
      SUBSCRIPTIONS_PER_IP: '3',
      SUBSCRIPTION_HEARTBEAT_MS: '100',
      GRAPHQL_MAX_DEPTH: '2',
      GRAPHQL_MAX_COST: '30',
      GRAPHQL_MAX_ALIASES: '40',
    })
    ;({ base, stop } = await listen(t.app))
    await importDocument({ vaults: [liveVault('live-a'), liveVault('live-b')] }, t.db.prisma)
  })
  // A failed test's streams must not count against the next test's limits.
  afterEach(async () => {
    for (const s of open.splice(0)) s.close()
    await settled(0)
  })
  afterAll(async () => {
    await stop()
    await t.close()
  })

  it("sends the vault's new values after an import, within 1 s, and nothing for other vaults", async () => {
    const s = await sub(VAULT_UPDATED, { id: 'live-a' })
    expect(s.status).toBe(200)
    expect(s.headers.get('content-type')).toBe('text/event-stream')
    await adminImport({ vaults: [liveVault('live-b', { tvl: '5' })] })
    await adminImport({ vaults: [liveVault('live-a', { tvl: '2500.5', share_price: '1.25' })] })
    expect(await s.next(1000)).toEqual({
      event: 'next',
      data: { data: { vaultUpdated: { id: 'live-a', tvl: '2500.5', sharePrice: '1.25', status: 'active' } } },
    })
    // The other vault's import sent nothing here.
    expect(s.buffered).toEqual([])
    // A composition-only import changes the vault too.
    await importDocument(
      {
        vaults: [],
        compositions: [
          {
            vault_id: 'live-a',
            as_of: '2026-11-21T06:00:00.000Z',
            positions: [{ platform: 'aave', asset: 'USDC', symbol: 'USDC', pct: 100, apy_est_pct: 4, icon: 'https://x.example/a.svg' }],
          },
        ],
      },
      t.db.prisma,
    )
    expect((await s.next(1000)).data.data.vaultUpdated.id).toBe('live-a')
    s.close()
    expect(await settled(0)).toEqual({ listeners: 0, open: 0 })
  })

  it('sends heartbeat comments while nothing happens', async () => {
    const s = await sub(VAULT_UPDATED, { id: 'live-b' })
    await eventually(() => s.comments >= 3, { timeoutMs: 30_000, intervalMs: 50, what: 'three heartbeat comments' })
    expect(s.buffered).toEqual([])
    s.close()
    expect(await settled(0)).toEqual({ listeners: 0, open: 0 })
  })

  it("sends a wallet's new transactions and status changes, not another wallet's", async () => {
    // Any case: the one address rule.
    const s = await sub(WALLET_ACTIVITY, { address: ALICE.toUpperCase().replace('0X', '0x') })
    expect(s.status).toBe(200)
    await adminImport({
      vaults: [],
      transactions: [
        liveTransaction('bob-1', 'live-a', BOB),
        liveTransaction('alice-1', 'live-a', ALICE, { amount: '12.5' }),
        liveTransaction('alice-2', 'live-b', ALICE, { type: 'redeem', status: 'pending', completed_at: null, timestamp: '2026-11-21T10:00:00.000Z' }),
      ],
    })
    expect([await s.next(1000), await s.next(1000)]).toEqual([
      { event: 'next', data: { data: { walletActivity: { id: 'alice-1', vaultId: 'live-a', type: 'deposit', status: 'completed', amount: '12.5' } } } },
      { event: 'next', data: { data: { walletActivity: { id: 'alice-2', vaultId: 'live-b', type: 'redeem', status: 'pending', amount: '100' } } } },
    ])
    // The redeem completes.
    await adminImport({
      vaults: [],
      transactions: [
        liveTransaction('alice-2', 'live-b', ALICE, { type: 'redeem', timestamp: '2026-11-21T10:00:00.000Z', completed_at: '2026-11-22T10:00:00.000Z' }),
      ],
    })
    expect((await s.next(1000)).data.data.walletActivity).toEqual({ id: 'alice-2', vaultId: 'live-b', type: 'redeem', status: 'completed', amount: '100' })
    await adminImport({ vaults: [], transactions: [liveTransaction('bob-2', 'live-a', BOB)] })
    s.close()
    expect(s.buffered).toEqual([])
    expect(await settled(0)).toEqual({ listeners: 0, open: 0 })
  })

  it('delivers every transaction of an import too large for one NOTIFY (8000 bytes)', async () => {
    const s = await sub(WALLET_ACTIVITY, { address: BOB })
    // 600 ids of 24 characters: about 16 KB of announcement, sent as several notifications.
    const ids = Array.from({ length: 600 }, (_, i) => `bulk-transaction-${String(i).padStart(7, '0')}`)
    await adminImport({ vaults: [], transactions: ids.map((id) => liveTransaction(id, 'live-b', BOB)) })
    const seen: string[] = []
    while (seen.length < ids.length) seen.push((await s.next(2000)).data.data.walletActivity.id)
    expect(seen.sort()).toEqual(ids)
  })

  it('refuses a malformed address and an unknown vault with spec errors', async () => {
    const bad = await sub(WALLET_ACTIVITY, { address: '0x123' })
    expect(bad.status).toBe(400)
    expect(await bad.next()).toEqual({
      event: 'next',
      data: {
        errors: [
          {
            message: 'address must be an EVM address: 0x followed by 40 hex digits.',
            path: ['walletActivity'],
            locations: expect.any(Array),
            extensions: { code: 'bad_request' },
          },
        ],
      },
    })
    expect((await bad.next()).event).toBe('complete')
    const unknown = await sub(VAULT_UPDATED, { id: 'nope' })
    expect(unknown.status).toBe(404)
    expect((await unknown.next()).data.errors).toEqual([expect.objectContaining({ message: 'Vault "nope" not found.', extensions: { code: 'not_found' } })])
    expect(await settled(0)).toEqual({ listeners: 0, open: 0 })
  })

  it('applies the depth and cost limits to subscription documents', async () => {
    // Refused by validation: GraphQL-over-SSE reports it as the stream's one event (status 200).
    const deep = await sub('subscription($id: ID!) { vaultUpdated(id: $id) { contract { address } } }', { id: 'live-a' })
    expect(await deep.next()).toEqual({
      event: 'next',
      data: { errors: [{ message: 'Query depth limit of 2 exceeded, found 3.', extensions: { code: 'bad_request' } }] },
    })
    // 31 scalar fields: over GRAPHQL_MAX_COST=30.
    const fields = Array.from({ length: 31 }, (_, i) => `f${i}: id`).join(' ')
    const costly = await sub(`subscription($id: ID!) { vaultUpdated(id: $id) { ${fields} } }`, { id: 'live-a' })
    expect(await costly.next()).toEqual({
      event: 'next',
      data: { errors: [{ message: 'Query Cost limit of 30 exceeded, found 32.', extensions: { code: 'bad_request' } }] },
    })
    expect((await costly.next()).event).toBe('complete')
    expect(await settled(0)).toEqual({ listeners: 0, open: 0 })
  })

  it('refuses more streams per client IP than SUBSCRIPTIONS_PER_IP, and admits again once one closes', async () => {
    const held = [await sub(VAULT_UPDATED, { id: 'live-a' }), await sub(VAULT_UPDATED, { id: 'live-a' }), await sub(WALLET_ACTIVITY, { address: ALICE })]
    expect(held.map((s) => s.status)).toEqual([200, 200, 200])
    const refused = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: VAULT_UPDATED, variables: { id: 'live-a' } }),
    })
    expect(refused.status).toBe(429)
    expect(await refused.json()).toEqual({
      errors: [{ message: 'At most 3 subscriptions may be open at once from one client IP; close one first.', extensions: { code: 'rate_limited' } }],
    })
    // Plain queries are not streams: still answered.
    expect((await t.graphql('{ vault(id: "live-a") { id } }')).status).toBe(200)
    held[0]!.close()
    expect(await settled(2)).toEqual({ listeners: 2, open: 2 })
    const again = await sub(VAULT_UPDATED, { id: 'live-a' })
    expect(again.status).toBe(200)
    for (const s of [...held, again]) s.close()
    expect(await settled(0)).toEqual({ listeners: 0, open: 0 })
  })

  it("answers a subscription sent with curl's default Accept (*/*) as a stream, counted against the same limits", async () => {
    const anyAccept = (query: string, variables: Record<string, unknown>) =>
      subscribe((url, init) => fetch(url, { ...init, headers: { 'content-type': 'application/json', accept: '*/*' } }), `${base}/graphql`, query, variables)
    const held = [
      await anyAccept(VAULT_UPDATED, { id: 'live-a' }),
      await anyAccept(VAULT_UPDATED, { id: 'live-a' }),
      await anyAccept(WALLET_ACTIVITY, { address: ALICE }),
    ]
    open.push(...held)
    expect(held.map((s) => [s.status, s.headers.get('content-type')])).toEqual(Array(3).fill([200, 'text/event-stream']))
    // The two identical vault subscriptions share one execution: one hub listener for both.
    expect(await settled(2, 3)).toEqual({ listeners: 2, open: 3 })
    await adminImport({ vaults: [liveVault('live-a', { tvl: '31' })] })
    expect((await held[0]!.next(1000)).data.data.vaultUpdated.tvl).toBe('31')
    const refused = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: VAULT_UPDATED, variables: { id: 'live-a' } }),
    })
    expect([refused.status, await refused.json()]).toEqual([
      429,
      { errors: [{ message: 'At most 3 subscriptions may be open at once from one client IP; close one first.', extensions: { code: 'rate_limited' } }] },
    ])
    expect(await settled(2, 3)).toEqual({ listeners: 2, open: 3 })
  })

  it('refuses a subscription whose Accept excludes event streams with 406, leaving nothing registered', async () => {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
      body: JSON.stringify({ query: VAULT_UPDATED, variables: { id: 'live-a' } }),
    })
    expect([res.status, await res.json()]).toEqual([
      406,
      { errors: [{ message: 'A subscription is answered as Server-Sent Events: send Accept: text/event-stream.', extensions: { code: 'bad_request' } }] },
    ])
    expect(await settled(0)).toEqual({ listeners: 0, open: 0 })
  })

  it('ends every stream with `complete` on shutdown and refuses new ones', async () => {
    const a = await sub(VAULT_UPDATED, { id: 'live-a' })
    const b = await sub(WALLET_ACTIVITY, { address: BOB })
    expect(await settled(2)).toEqual({ listeners: 2, open: 2 })
    t.app.subscriptions.close()
    await Promise.all([a.ended, b.ended])
    expect([a.buffered, b.buffered]).toEqual([[{ event: 'complete', data: null }], [{ event: 'complete', data: null }]])
    expect({ listeners: t.app.subscriptions.listeners, open: t.app.subscriptions.open }).toEqual({ listeners: 0, open: 0 })
    const late = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: VAULT_UPDATED, variables: { id: 'live-a' } }),
    })
    expect(late.status).toBe(503)
    expect(await late.json()).toEqual({
      errors: [{ message: 'The gateway is shutting down; subscribe again (another instance will answer).', extensions: { code: 'unavailable' } }],
    })
  })
})

describe(`subscription limits per instance (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ SUBSCRIPTIONS_MAX: '1' })
    await importDocument({ vaults: [liveVault('live-a')] }, t.db.prisma)
  })
  afterAll(() => t.close())

  it('refuses a stream beyond SUBSCRIPTIONS_MAX with 503 unavailable and Retry-After', async () => {
    const fetcher = (url: string, init: RequestInit) => t.app.fetch(new Request(url, init))
    const first = await subscribe(fetcher, 'http://vaultgate.test/graphql', VAULT_UPDATED, { id: 'live-a' })
    expect(first.status).toBe(200)
    const second = await fetcher('http://vaultgate.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: VAULT_UPDATED, variables: { id: 'live-a' } }),
    })
    expect([second.status, second.headers.get('retry-after'), await second.json()]).toEqual([
      503,
      '5',
      { errors: [{ message: 'This instance has its maximum of 1 subscriptions open; try again shortly.', extensions: { code: 'unavailable' } }] },
    ])
    first.close()
    await first.ended
    await eventually(() => expect({ listeners: t.app.subscriptions.listeners, open: t.app.subscriptions.open }).toEqual({ listeners: 0, open: 0 }), {
      timeoutMs: 1000,
    })
  })
})
