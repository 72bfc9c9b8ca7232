import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEY_LIFETIME_MS } from '../../src/keys/format.js'
import { testBackend } from '../support/db.js'
import { createKeysTestApp, type KeysTestApp } from '../support/keys.js'
import { listen } from '../support/live.js'
import { subscribe, type Subscription } from '../support/sse.js'

// apiKeyChanged (docs/spec/decisions.md §11): the caller's own key history entries from the
// moment it subscribes, over SSE, under the wallet session and key-management rules of `apiKey`.

const W = '0x5555555555555555555555555555555555555555'
const OTHER = '0x6666666666666666666666666666666666666666'
const QUERY = 'subscription { apiKeyChanged { type keyId keyPrefix atMs } }'

describe(`apiKeyChanged (${testBackend})`, () => {
  // Real time, shifted by `offset`: a key's expiry can be brought a moment away.
  let offset = 0
  let t: KeysTestApp
  let base: string
  let stop: () => Promise<void>
  const open: Subscription[] = []
  const sub = async (headers: Record<string, string>) => {
    const s = await subscribe(fetch, `${base}/graphql`, QUERY, {}, headers)
    open.push(s)
    return s
  }
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: () => new Date(Date.now() + offset), allowlist: [W, OTHER] })
    ;({ base, stop } = await listen(t.app))
  })
  afterAll(async () => {
    for (const s of open) s.close()
    await stop()
    await t.close()
  })

  it("sends the caller's key being created, replaced and revoked, and nothing of another wallet's key", async () => {
    const s = await sub(await t.session([W]))
    expect(s.status).toBe(200)
    // Key answers follow the key-management header policy.
    expect(s.headers.get('cache-control')).toBe('no-store')
    await t.create(OTHER)
    const first = (await t.create(W, { keyPrefix: 'live' })).body.data
    const created = await s.next(1000)
    expect(created).toEqual({
      event: 'next',
      data: { data: { apiKeyChanged: { type: 'created', keyId: first.id, keyPrefix: 'live', atMs: first.createdAtMs } } },
    })
    const second = (await t.create(W)).body.data
    expect([await s.next(1000), await s.next(1000)]).toEqual([
      { event: 'next', data: { data: { apiKeyChanged: { type: 'replaced', keyId: first.id, keyPrefix: 'live', atMs: second.createdAtMs } } } },
      { event: 'next', data: { data: { apiKeyChanged: { type: 'created', keyId: second.id, keyPrefix: 'vaultgate', atMs: second.createdAtMs } } } },
    ])
    await t.revoke(OTHER)
    await t.revoke(W)
    expect((await s.next(1000)).data.data.apiKeyChanged).toMatchObject({ type: 'revoked', keyId: second.id })
    // Nothing of OTHER's create and revoke arrived in between.
    expect(s.buffered).toEqual([])
    s.close()
  })

  it('sends `disabled` when the wallet leaves the allowlist', async () => {
    const key = (await t.create(OTHER)).body.data
    const s = await sub(await t.session([OTHER]))
    expect((await t.unlist(OTHER)).status).toBe(200)
    expect((await s.next(1000)).data.data.apiKeyChanged).toMatchObject({ type: 'disabled', keyId: key.id })
    s.close()
  })

  it('sends `expired` when the key expires, which no commit announces', async () => {
    const key = (await t.create(W)).body.data
    // The key's 30 days are almost over.
    offset = KEY_LIFETIME_MS - 400
    try {
      const s = await sub(await t.session([W]))
      expect((await s.next(3000)).data.data.apiKeyChanged).toEqual({ type: 'expired', keyId: key.id, keyPrefix: 'vaultgate', atMs: key.expiresAtMs })
      s.close()
    } finally {
      offset = 0
    }
  })

  it('refuses a caller without a wallet session, and a web origin outside CORS_KEY_ORIGINS', async () => {
    const anonymous = await sub({})
    expect(anonymous.status).toBe(401)
    expect((await anonymous.next()).data.errors[0].extensions.code).toBe('unauthorized')
    const foreign = await sub({ ...(await t.session([W])), origin: 'https://evil.example' })
    expect(foreign.status).toBe(401)
    expect((await foreign.next()).data.errors[0]).toMatchObject({ message: 'Key management is not allowed from the web origin "https://evil.example".' })
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull()
  })
})
