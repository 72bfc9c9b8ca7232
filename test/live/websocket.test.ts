import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { createKeysTestApp, type KeysTestApp } from '../support/keys.js'
import { testBackend } from '../support/db.js'
import { eventually } from '../support/eventually.js'
import { listen, liveVault } from '../support/live.js'
import { subscribe, type Subscription } from '../support/sse.js'
import { rawSocket, wsClient, wsSubscribe, type RawSocket } from '../support/ws.js'
import type { Client } from 'graphql-ws'

// Subscriptions over WebSocket (graphql-transport-ws on /graphql, decisions §15, docs/push.md),
// with graphql-ws' own client over a real socket: what a subscriber receives after an import, the
// caps it shares with SSE, and the protocol's close codes for what a client gets wrong.

const ADMIN = 'admin-token-for-ws-tests-0123456789abcdef'
const VAULT_UPDATED = 'subscription($id: ID!) { vaultUpdated(id: $id) { id tvl sharePrice } }'

describe(`subscriptions over WebSocket (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  const clients: Client[] = []
  const sse: Subscription[] = []
  const raws: RawSocket[] = []
  const client = (params?: Record<string, unknown>, headers?: Record<string, string>) => {
    const c = wsClient(base, params, headers)
    clients.push(c)
    return c
  }
  const raw = (protocol?: string) => {
    const r = rawSocket(base, protocol)
    raws.push(r)
    return r
  }
  const settled = () =>
    eventually(() => t.app.subscriptions.open === 0 && t.app.subscriptions.listeners === 0 && t.app.subscriptions.sockets === 0, {
      timeoutMs: 5000,
      intervalMs: 10,
      what: 'every subscription and socket gone',
    })

  beforeAll(async () => {
    t = await createTestApp({ ADMIN_TOKEN: ADMIN, SUBSCRIPTIONS_PER_IP: '3', REQUEST_BODY_LIMIT_BYTES: '4096', RATE_LIMIT_PUBLIC_PER_MINUTE: '0' })
    ;({ base, stop } = await listen(t.app))
    await importDocument({ vaults: [liveVault('ws-a'), liveVault('ws-b')] }, t.db.prisma)
  })
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.dispose()
    for (const s of sse.splice(0)) s.close()
    for (const r of raws.splice(0)) r.socket.terminate()
    await settled()
  })
  afterAll(async () => {
    await stop()
    await t.close()
  })

  it("sends the vault's new values after an import, and forgets the subscription once the client unsubscribes", async () => {
    const s = wsSubscribe(client(), VAULT_UPDATED, { id: 'ws-a' })
    await eventually(() => t.app.subscriptions.listeners === 1, { timeoutMs: 5000, intervalMs: 10, what: 'the subscription registered' })
    expect(t.app.subscriptions.open).toBe(1)
    const res = await fetch(`${base}/admin/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ vaults: [liveVault('ws-b', { tvl: '5' }), liveVault('ws-a', { tvl: '2500.5', share_price: '1.25' })] }),
    })
    expect(res.status).toBe(200)
    expect(await s.next(1000)).toEqual({ data: { vaultUpdated: { id: 'ws-a', tvl: '2500.5', sharePrice: '1.25' } } })
    expect(s.buffered).toEqual([])
    s.close()
    await eventually(() => t.app.subscriptions.open === 0 && t.app.subscriptions.listeners === 0, {
      timeoutMs: 5000,
      intervalMs: 10,
      what: 'the place released',
    })
  })

  it('releases the place and the listeners of a client that vanishes mid-subscription', async () => {
    const r = raw()
    await r.opened
    r.send({ type: 'connection_init' })
    await r.message()
    r.send({ id: 'a', type: 'subscribe', payload: { query: VAULT_UPDATED, variables: { id: 'ws-a' } } })
    await eventually(() => t.app.subscriptions.listeners === 1 && t.app.subscriptions.open === 1, { timeoutMs: 5000, intervalMs: 10, what: 'subscribed' })
    r.socket.terminate()
    await settled()
  })

  it('counts WebSocket subscriptions and SSE streams together against SUBSCRIPTIONS_PER_IP', async () => {
    for (let i = 0; i < 2; i++) {
      const s = await subscribe(fetch, `${base}/graphql`, VAULT_UPDATED, { id: 'ws-a' })
      sse.push(s)
      expect(s.status).toBe(200)
    }
    const c = client()
    const third = wsSubscribe(c, VAULT_UPDATED, { id: 'ws-b' })
    await eventually(() => t.app.subscriptions.open === 3, { timeoutMs: 5000, intervalMs: 10, what: 'three places taken' })
    // The fourth, on the same socket: an error message for that operation; the socket stays.
    const fourth = wsSubscribe(c, VAULT_UPDATED, { id: 'ws-b' })
    expect(await fourth.ended).toEqual([
      { message: 'At most 3 subscriptions may be open at once from one client IP; close one first.', extensions: { code: 'rate_limited' } },
    ])
    // And over SSE, the usual 429.
    const refused = await subscribe(fetch, `${base}/graphql`, VAULT_UPDATED, { id: 'ws-a' })
    sse.push(refused)
    expect(refused.status).toBe(429)
    // One place freed (a WebSocket one): an SSE stream may take it.
    third.close()
    await eventually(() => t.app.subscriptions.open === 2, { timeoutMs: 5000, intervalMs: 10, what: 'the WebSocket place released' })
    const again = await subscribe(fetch, `${base}/graphql`, VAULT_UPDATED, { id: 'ws-a' })
    sse.push(again)
    expect(again.status).toBe(200)
  })

  it('answers errors of the document as the operation’s error message, and queries with a pointer to HTTP', async () => {
    const c = client()
    expect(await wsSubscribe(c, VAULT_UPDATED, { id: 'nope' }).ended).toBeUndefined()
    const unknown = wsSubscribe(c, VAULT_UPDATED, { id: 'nope' })
    const first = await unknown.next()
    expect(first).toEqual({ errors: [expect.objectContaining({ message: 'Vault "nope" not found.', extensions: { code: 'not_found' } })] })
    expect(await wsSubscribe(c, 'subscription { nope }').ended).toEqual([
      expect.objectContaining({ message: 'Cannot query field "nope" on type "Subscription".', extensions: { code: 'bad_request' } }),
    ])
    expect(await wsSubscribe(c, 'subscription {').ended).toEqual([
      { message: 'Syntax Error: Expected Name, found <EOF>.', extensions: { code: 'bad_request' } },
    ])
    expect(await wsSubscribe(c, '{ vaults { edges { node { id } } } }').ended).toEqual([
      { message: 'Over WebSocket, /graphql serves subscriptions; send a query by POST /graphql.', extensions: { code: 'bad_request' } },
    ])
    expect(t.app.subscriptions.open).toBe(0)
  })

  it('closes with 4400 on a message the protocol does not have, and 4401 on a subscribe before connection_init', async () => {
    const unknown = raw()
    await unknown.opened
    unknown.send({ type: 'connection_init' })
    expect(await unknown.message()).toEqual({ type: 'connection_ack' })
    unknown.send({ type: 'hello' })
    expect(await unknown.closed).toEqual({ code: 4400, reason: 'Invalid message received' })

    const serverOnly = raw()
    await serverOnly.opened
    serverOnly.send({ type: 'connection_init' })
    await serverOnly.message()
    serverOnly.send({ type: 'next', id: '1', payload: {} })
    expect((await serverOnly.closed).code).toBe(4400)

    const early = raw()
    await early.opened
    early.send({ id: '1', type: 'subscribe', payload: { query: VAULT_UPDATED, variables: { id: 'ws-a' } } })
    expect(await early.closed).toEqual({ code: 4401, reason: 'Unauthorized' })
  })

  it('closes with 1009 on a frame over REQUEST_BODY_LIMIT_BYTES, holding nothing', async () => {
    const big = raw()
    await big.opened
    big.send({ type: 'connection_init' })
    await big.message()
    big.send({ id: '1', type: 'subscribe', payload: { query: `${VAULT_UPDATED}#${'x'.repeat(5000)}`, variables: { id: 'ws-a' } } })
    expect((await big.closed).code).toBe(1009)
  })

  it('answers a ping with a pong, and a connection_init with a token that is not a string with 4400', async () => {
    const r = raw()
    await r.opened
    r.send({ type: 'ping' })
    expect(await r.message()).toEqual({ type: 'pong' })
    r.send({ type: 'connection_init', payload: { authorization: 42 } })
    expect(await r.closed).toEqual({ code: 4400, reason: 'connection_init payload.authorization must be a string.' })
  })

  it('lets a WebSocket upgrade of another subprotocol through as a request, answered with the sentence naming graphql-transport-ws', async () => {
    // subscriptions-transport-ws' subprotocol, as old Apollo clients offer it.
    const other = raw('graphql-ws')
    const body = {
      errors: [
        {
          message:
            'WebSocket on /graphql speaks the graphql-transport-ws subprotocol (Sec-WebSocket-Protocol: graphql-transport-ws), for subscriptions; or use Server-Sent Events (Accept: text/event-stream).',
          extensions: { code: 'bad_request' },
        },
      ],
    }
    await expect(other.opened).rejects.toThrow(`HTTP 400 ${JSON.stringify(body)}`)
  })
})

describe(`WebSocket timeouts and browser origins (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  beforeAll(async () => {
    t = await createTestApp({ REQUEST_TIMEOUT_MS: '300', SUBSCRIPTION_HEARTBEAT_MS: '100', CORS_ORIGINS: 'https://dash.example' })
    ;({ base, stop } = await listen(t.app))
  })
  afterAll(async () => {
    await stop()
    await t.close()
  })

  it('closes a socket that sends no connection_init within REQUEST_TIMEOUT_MS with 4408', async () => {
    const r = rawSocket(base)
    await r.opened
    expect(await r.closed).toEqual({ code: 4408, reason: 'Connection initialisation timeout' })
    await eventually(() => t.app.subscriptions.sockets === 0, { timeoutMs: 5000, intervalMs: 10, what: 'the socket gone' })
  })

  it('pings every SUBSCRIPTION_HEARTBEAT_MS and cuts a socket that stops answering', async () => {
    const answering = rawSocket(base)
    const silent = rawSocket(base, undefined, {}, { autoPong: false })
    await Promise.all([answering.opened, silent.opened])
    for (const r of [answering, silent]) r.send({ type: 'connection_init' })
    // Cut (no close frame: the peer is taken for gone) after the ping it left unanswered.
    expect((await silent.closed).code).toBe(1006)
    await eventually(() => answering.pings >= 3, { timeoutMs: 5000, intervalMs: 10, what: 'three pings answered' })
    expect(answering.socket.readyState).toBe(answering.socket.OPEN)
    answering.socket.terminate()
    await eventually(() => t.app.subscriptions.sockets === 0, { timeoutMs: 5000, intervalMs: 10, what: 'the sockets gone' })
  })

  it('refuses an upgrade from a web origin outside CORS_ORIGINS with 403, and takes one from an allowed origin', async () => {
    const stranger = rawSocket(base, undefined, { origin: 'https://evil.example' })
    const refusal = await stranger.opened.then(
      () => '',
      (e: Error) => e.message,
    )
    expect(refusal.slice(0, 9)).toBe('HTTP 403 ')
    expect(JSON.parse(refusal.slice(9))).toMatchObject({
      status: 'error',
      error: { code: 'unauthorized', message: 'WebSocket connections from the web origin "https://evil.example" are not allowed (CORS_ORIGINS).' },
    })
    const dashboard = rawSocket(base, undefined, { origin: 'https://dash.example' })
    await dashboard.opened
    dashboard.socket.terminate()
  })
})

describe(`wallet sessions over WebSocket (${testBackend})`, () => {
  const W = '0x5555555555555555555555555555555555555555'
  const STRANGER = '0x7777777777777777777777777777777777777777'
  const KEY_CHANGED = 'subscription { apiKeyChanged { type keyPrefix } }'
  let t: KeysTestApp
  let base: string
  let stop: () => Promise<void>
  const clients: Client[] = []
  const client = (params?: Record<string, unknown>) => {
    const c = wsClient(base, params)
    clients.push(c)
    return c
  }
  beforeAll(async () => {
    t = await createKeysTestApp({ allowlist: [W], env: { RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '3' } })
    ;({ base, stop } = await listen(t.app))
  })
  afterAll(async () => {
    for (const c of clients) await c.dispose()
    await stop()
    await t.close()
  })

  it("authenticates from connection_init's payload.authorization: the caller's own key changes arrive", async () => {
    const s = wsSubscribe(client({ authorization: (await t.session([W])).authorization }), KEY_CHANGED)
    await eventually(() => t.app.subscriptions.open === 1, { timeoutMs: 5000, intervalMs: 10, what: 'the subscription open' })
    // The subscription is established once it has read the history it starts after.
    await eventually(() => t.app.subscriptions.listeners === 1, { timeoutMs: 5000, intervalMs: 10, what: 'the subscription registered' })
    expect((await t.create(W, { keyPrefix: 'wsk' })).status).toBe(200)
    expect(await s.next(2000)).toEqual({ data: { apiKeyChanged: { type: 'created', keyPrefix: 'wsk' } } })
    s.close()
    await eventually(() => t.app.subscriptions.open === 0, { timeoutMs: 5000, intervalMs: 10, what: 'the place released' })
  })

  it('without a token, apiKeyChanged answers unauthorized as over HTTP', async () => {
    const s = wsSubscribe(client(), KEY_CHANGED)
    expect(await s.next()).toEqual({
      errors: [
        expect.objectContaining({ message: 'A valid wallet-session token is required (Authorization: Bearer <JWT>).', extensions: { code: 'unauthorized' } }),
      ],
    })
  })

  it('closes with 4403 on a token that is not valid or a wallet off the allowlist, and 4429 past the wrong-token budget', async () => {
    const closeOf = async (payload: Record<string, unknown>) => {
      const r = rawSocket(base)
      await r.opened
      r.send({ type: 'connection_init', payload })
      const closed = await r.closed
      expect(r.messages).toEqual([])
      return closed
    }
    expect(await closeOf({ authorization: (await t.session([STRANGER])).authorization })).toEqual({
      code: 4403,
      reason: 'This wallet is not on the allowlist.',
    })
    // Wrong tokens until the client's budget (3 a minute, which the stranger's session and the
    // anonymous apiKeyChanged above counted in) is spent: 4403 each, then 4429.
    const codes: number[] = []
    while (codes.at(-1) !== 4429 && codes.length < 5) {
      const closed = await closeOf({ authorization: 'Bearer not-a-token' })
      if (closed.code === 4403) expect(closed.reason).toBe('A valid wallet-session token is required (Authorization: Bearer <JWT>).')
      codes.push(closed.code)
    }
    expect(codes).toEqual([...codes.slice(0, -1).map(() => 4403), 4429])
    expect(codes.length).toBeGreaterThanOrEqual(2)
  })
})
