import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createApiKeyVerifier, VerifierUnavailableError } from '../../src/keys/verifier.js'
import { createLogger, setLogger } from '../../src/core/log.js'
import { testBackend } from '../support/db.js'
import { ADMIN_TOKEN, createKeysTestApp, INTERNAL_TOKEN, manualClock, type KeysTestApp } from '../support/keys.js'
import { recordSql } from '../support/sql.js'

// decisions.md §7: the order exchange's view of a key, and how fast it changes (spec §3, §8).

setLogger(createLogger('silent'))

const W1 = '0x1000000000000000000000000000000000000001'
const W2 = '0x2000000000000000000000000000000000000002'
const ok = (data: unknown) => ({ status: 'ok', data, server_time_ms: expect.any(Number) })
/** The key's verification budget (RATE_LIMIT_VERIFY_PER_MINUTE, 1200 by default) after the call. */
const RATE = { limit: 1200, remaining: expect.any(Number), resetMs: expect.any(Number) }
const UNKNOWN = { active: false, wallet: null, keyId: null, expiresAtMs: null, expiresInMs: null, reason: 'unknown', rateLimit: RATE }

describe(`POST /internal/v1/apiKey/verify (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W1, W2] })
  })
  afterAll(() => t.close())
  beforeEach(() => {
    t.app.verifier.clear()
  })

  const created = async (wallet = W1) => (await t.create(wallet)).body.data as { id: string; apiKey: string; expiresAtMs: number }

  it('answers an active key with its wallet, id and expiry, and no-store', async () => {
    const key = await created()
    const res = await t.verify(key.apiKey)
    expect(res).toEqual({
      status: 200,
      body: ok({
        active: true,
        wallet: W1,
        keyId: key.id,
        expiresAtMs: key.expiresAtMs,
        expiresInMs: key.expiresAtMs - time.now(),
        reason: null,
        rateLimit: RATE,
      }),
      headers: expect.anything(),
    })
    expect(res.headers.get('cache-control')).toBe('no-store')
  })

  it('answers unknown for keys it never issued, without touching the database for malformed ones', async () => {
    const key = await created()
    const flipped = key.apiKey.slice(0, -1) + (key.apiKey.endsWith('2') ? '3' : '2')
    expect((await t.verify(flipped)).body).toEqual(ok(UNKNOWN))
    for (const raw of ['nope', `${key.apiKey}x`, key.apiKey.replace('vaultgate_', 'vaultgate-'), `_${key.apiKey.slice(10)}`, ' '.repeat(3)]) {
      const { result, statements } = await recordSql(() => t.verify(raw))
      expect([raw, result.body]).toEqual([raw, ok(UNKNOWN)])
      expect(statements).toEqual([])
    }
  })

  it('is for the order exchange only: 404 without INTERNAL_TOKEN, 401 with a wrong token, 400 on a bad body', async () => {
    const post = async (body: string, authorization = `Bearer ${INTERNAL_TOKEN}`) => {
      const res = await t.request('/internal/v1/apiKey/verify', { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body })
      return { status: res.status, body: await res.json() }
    }
    expect((await post('{"apiKey":"x"}', `Bearer ${ADMIN_TOKEN}`)).body.error).toEqual({
      code: 'unauthorized',
      message: 'A valid internal token is required (Authorization: Bearer <INTERNAL_TOKEN>).',
    })
    expect((await post('{"apiKey":"x"}', '')).status).toBe(401)
    expect((await post('{"apiKey":42}')).body.error).toEqual({ code: 'bad_request', message: 'apiKey must be a string.' })
    // An empty key is a key nobody holds: unknown, as docs/keys.md says, not a malformed request.
    expect(await post('{"apiKey":""}')).toEqual({
      status: 200,
      body: { status: 'ok', data: UNKNOWN, server_time_ms: expect.any(Number) },
    })
    expect((await post('[]')).status).toBe(400)
    expect((await post('nope')).body.error).toEqual({ code: 'bad_request', message: 'The request body must be JSON: {"apiKey":"…", "clientIp":"…"}.' })
    expect((await post(JSON.stringify({ apiKey: 'x'.repeat(5000) }))).body.error).toEqual({
      code: 'bad_request',
      message: 'The request body is larger than 4 KiB.',
    })

    const off = createApp({ config: loadConfig({ LOG_LEVEL: 'silent' }), db: t.db })
    try {
      const res = await off.fetch(
        new Request('http://t/internal/v1/apiKey/verify', { method: 'POST', headers: { authorization: `Bearer ${INTERNAL_TOKEN}` }, body: '{"apiKey":"x"}' }),
      )
      expect([res.status, (await res.json()).error.code]).toEqual([404, 'not_found'])
    } finally {
      await off.close()
    }
  })

  it('caches key state: one statement on a miss, none on a hit, one again after 30 s', async () => {
    const key = await created()
    expect((await recordSql(() => t.verify(key.apiKey))).statements).toHaveLength(1)
    time.advance(29_999)
    const hit = await recordSql(() => t.verify(key.apiKey))
    expect([hit.statements, hit.result.body.data.active]).toEqual([[], true])
    time.advance(1)
    expect((await recordSql(() => t.verify(key.apiKey))).statements).toHaveLength(1)
  })

  it('re-checks expiry on every call, cached or not', async () => {
    const key = await created()
    time.set(key.expiresAtMs - 1)
    expect((await t.verify(key.apiKey)).body.data.active).toBe(true)
    time.set(key.expiresAtMs)
    const { result, statements } = await recordSql(() => t.verify(key.apiKey))
    expect(statements).toEqual([])
    expect(result.body).toEqual(
      ok({ active: false, wallet: W1, keyId: key.id, expiresAtMs: key.expiresAtMs, expiresInMs: 0, reason: 'expired', rateLimit: RATE }),
    )
    // Once a new key replaces it, it stays `expired` (the revocation records why).
    time.advance(1000)
    await created()
    expect((await t.verify(key.apiKey)).body.data.reason).toBe('expired')
  })

  it('refuses a revoked key at once on this instance, although its state was cached', async () => {
    const key = await created()
    expect((await t.verify(key.apiKey)).body.data.active).toBe(true)
    expect((await t.revoke(W1)).body.data).toEqual({ revoked: true })
    expect((await t.verify(key.apiKey)).body).toEqual(
      ok({
        active: false,
        wallet: W1,
        keyId: key.id,
        expiresAtMs: key.expiresAtMs,
        expiresInMs: key.expiresAtMs - time.now(),
        reason: 'revoked',
        rateLimit: RATE,
      }),
    )
  })

  it('refuses a replaced key at once and accepts its successor', async () => {
    const old = await created()
    expect((await t.verify(old.apiKey)).body.data.active).toBe(true)
    const next = await created()
    expect((await t.verify(old.apiKey)).body.data).toMatchObject({ active: false, reason: 'revoked', keyId: old.id })
    expect((await t.verify(next.apiKey)).body.data).toMatchObject({ active: true, keyId: next.id })
  })

  it('refuses at once the key of a wallet removed through the admin API, which also revokes it', async () => {
    const key = await created(W2)
    expect((await t.verify(key.apiKey)).body.data.active).toBe(true)
    expect((await t.unlist(W2)).body).toEqual(ok({ address: W2, removed: true, revokedKeyId: key.id }))
    expect((await t.verify(key.apiKey)).body.data).toEqual({
      active: false,
      wallet: W2,
      keyId: key.id,
      expiresAtMs: key.expiresAtMs,
      expiresInMs: key.expiresAtMs - time.now(),
      reason: 'not_whitelisted',
      rateLimit: RATE,
    })
    expect(await t.db.prisma.keyEvent.findFirst({ where: { keyId: key.id, action: 'revoked' }, select: { reason: true, actor: true } })).toEqual({
      reason: 'allowlist_removed',
      actor: 'admin',
    })
    // Back on the allowlist, the wallet needs a new key: the old one stays revoked.
    await t.db.prisma.allowlistEntry.create({ data: { address: W2 } })
    expect((await t.verify(key.apiKey)).body.data.active).toBe(false)
    expect((await t.get(W2)).body.data).toBeNull()
  })

  it('refuses at once, without waiting for the cache, the key of a wallet taken off the allowlist by SQL', async () => {
    const key = await created(W2)
    expect((await t.verify(key.apiKey)).body.data.active).toBe(true)
    // Not through the gateway: the database revokes the key and notifies every verifier.
    await t.db.prisma.allowlistEntry.delete({ where: { address: W2 } })
    try {
      // The clock does not move: the cached state (30 s) is dropped by the notification, not by age.
      await vi.waitFor(
        async () =>
          expect((await t.verify(key.apiKey)).body.data).toEqual({
            active: false,
            wallet: W2,
            keyId: key.id,
            expiresAtMs: key.expiresAtMs,
            expiresInMs: key.expiresAtMs - time.now(),
            reason: 'not_whitelisted',
            rateLimit: RATE,
          }),
        { timeout: 5000, interval: 50 },
      )
    } finally {
      await t.db.prisma.allowlistEntry.create({ data: { address: W2 } })
    }
    // Listed again, the key stays revoked.
    expect((await t.verify(key.apiKey)).body.data).toMatchObject({ active: false, reason: 'not_whitelisted' })
  })
})

describe(`the verifier as a library (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W1] })
  })
  afterAll(() => t.close())

  it('verifies with its own cache and clock, and throws VerifierUnavailableError when it cannot read', async () => {
    const key = (await t.create(W1)).body.data
    const verifier = createApiKeyVerifier({ prisma: t.db.prisma, clock: time.clock, cacheTtlMs: 5000 })
    try {
      // Without a `limiter` there is no budget to report.
      expect(await verifier.verify(key.apiKey)).toEqual({
        active: true,
        wallet: W1,
        keyId: key.id,
        expiresAtMs: key.expiresAtMs,
        expiresInMs: key.expiresAtMs - time.now(),
        reason: null,
        rateLimit: null,
      })
      // Concurrent misses share one read.
      verifier.clear()
      const { statements } = await recordSql(() => Promise.all([verifier.verify(key.apiKey), verifier.verify(key.apiKey), verifier.verify(key.apiKey)]))
      expect(statements).toHaveLength(1)

      const broken = createApiKeyVerifier({ lookup: () => Promise.reject(new Error('connection refused')), clock: time.clock })
      await expect(broken.verify(key.apiKey)).rejects.toBeInstanceOf(VerifierUnavailableError)
      await broken.close()
    } finally {
      await verifier.close()
    }
  })

  it('never caches for longer than 30 s, whatever it is asked', async () => {
    const key = (await t.create(W1)).body.data
    const verifier = createApiKeyVerifier({ prisma: t.db.prisma, clock: time.clock, cacheTtlMs: 3_600_000 })
    try {
      await verifier.verify(key.apiKey)
      time.advance(30_000)
      expect((await recordSql(() => verifier.verify(key.apiKey))).statements).toHaveLength(1)
    } finally {
      await verifier.close()
    }
  })
})

// Last: it closes the database under the app (and the process-wide client with it).
describe(`verification without a database (${testBackend})`, () => {
  it('fails closed when the database cannot be reached: 503, never "unknown"', async () => {
    const time = manualClock()
    const other = await createKeysTestApp({ clock: time.clock, allowlist: [W1] })
    const key = (await other.create(W1)).body.data
    expect((await other.verify(key.apiKey)).body.data.active).toBe(true)
    await other.db.close()
    try {
      time.advance(30_000)
      expect(await other.verify(key.apiKey)).toMatchObject({
        status: 503,
        body: { status: 'error', error: { code: 'unavailable', message: 'API key state cannot be checked right now; refuse the key and retry shortly.' } },
      })
      expect((await other.verify(`${key.apiKey.slice(0, -1)}z`)).status).toBe(503)
    } finally {
      await other.app.close()
    }
  })
})
