import { createHash } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { KEY_LIFETIME_MS } from '../../src/keys/format.js'
import { testBackend } from '../support/db.js'
import { createKeysTestApp, manualClock, type KeysTestApp } from '../support/keys.js'
import { answered } from '../support/bodies.js'

// Spec §3 (lifecycle), §4 (key management endpoints), §2 (the record) and the audit trail.

const W1 = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const W2 = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const ok = (data: unknown) => ({ status: 'ok', data, server_time_ms: expect.any(Number) })
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

describe(`API key lifecycle over REST (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W1, W2] })
  })
  afterAll(() => t.close())
  beforeEach(async () => {
    await t.db.prisma.keyEvent.deleteMany()
    await t.db.prisma.apiKey.deleteMany()
  })

  const events = () =>
    t.db.prisma.keyEvent.findMany({ orderBy: { id: 'asc' }, select: { wallet: true, keyId: true, action: true, reason: true, actor: true, at: true } })

  it('creates a key: the record with the raw key once, no-store, only a digest kept, an audit event', async () => {
    const created = await t.create(W1)
    expect(created.status).toBe(200)
    expect(created.headers.get('cache-control')).toBe('no-store')
    const { data } = created.body
    expect(created.body).toEqual(
      ok({
        id: expect.stringMatching(UUID),
        keyPrefix: 'vaultgate',
        createdAtMs: time.now(),
        expiresAtMs: time.now() + KEY_LIFETIME_MS,
        revokedAtMs: null,
        name: null,
        allowedCidrs: [],
        lastUsedAtMs: null,
        expiresInMs: KEY_LIFETIME_MS,
        apiKey: expect.any(String),
      }),
    )
    expect(Object.keys(data)).toEqual([
      'id',
      'keyPrefix',
      'createdAtMs',
      'expiresAtMs',
      'revokedAtMs',
      'name',
      'allowedCidrs',
      'lastUsedAtMs',
      'expiresInMs',
      'apiKey',
    ])
    expect(data.apiKey).toMatch(/^vaultgate_[1-9A-HJ-NP-Za-km-z]{44}$/)
    expect(KEY_LIFETIME_MS).toBe(30 * 86_400_000)

    const rows = await t.db.prisma.$queryRaw<Record<string, unknown>[]>`SELECT * FROM api_keys`
    expect(rows).toHaveLength(1)
    expect(rows[0]!.digest).toBe(sha256(data.apiKey))
    const secret = data.apiKey.slice('vaultgate_'.length)
    expect(JSON.stringify(rows)).not.toContain(secret)
    expect(JSON.stringify(await t.db.prisma.$queryRaw`SELECT * FROM key_events`, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(secret)

    expect(await events()).toEqual([{ wallet: W1, keyId: data.id, action: 'created', reason: null, actor: W1, at: new Date(time.now()) }])
  })

  it('accepts an empty body, no body, or a keyPrefix; the raw key splits at its last "_"', async () => {
    const noBody = await t.request('/v1/apiKey', { method: 'POST', headers: { ...(await t.session([W1])), 'content-type': 'application/json' } })
    expect(noBody.status).toBe(200)
    expect((await noBody.json()).data.keyPrefix).toBe('vaultgate')
    for (const keyPrefix of ['x', 'my-bot_1', 'A'.repeat(32), '0_-_']) {
      const { status, body } = await t.create(W1, { keyPrefix })
      expect(status).toBe(200)
      expect(body.data.keyPrefix).toBe(keyPrefix)
      const cut = body.data.apiKey.lastIndexOf('_')
      expect([body.data.apiKey.slice(0, cut), body.data.apiKey.slice(cut + 1).length]).toEqual([keyPrefix, 44])
    }
  })

  it('takes a POST with no body and no Content-Type as an empty body, after judging the caller', async () => {
    const anonymous = await t.request('/v1/apiKey', { method: 'POST' })
    expect(anonymous.status).toBe(401)
    expect((await anonymous.json()).error.code).toBe('unauthorized')
    const created = await t.request('/v1/apiKey', { method: 'POST', headers: await t.session([W1]) })
    expect(created.status).toBe(200)
    expect((await created.json()).data.keyPrefix).toBe('vaultgate')
  })

  it('refuses keyPrefix: null (leave it out for the default) and a body not sent as application/json', async () => {
    expect(await t.create(W1, { keyPrefix: null })).toMatchObject({
      status: 400,
      body: {
        status: 'error',
        error: { code: 'bad_request', message: 'keyPrefix must be a string; leave it out for the default prefix.' },
        server_time_ms: expect.any(Number),
      },
    })
    for (const contentType of [undefined, 'text/plain', 'application/x-www-form-urlencoded']) {
      const res = await t.request('/v1/apiKey', {
        method: 'POST',
        headers: { ...(await t.session([W1])), ...(contentType ? { 'content-type': contentType } : {}) },
        body: '{}',
      })
      expect(res.status, contentType).toBe(400)
      expect((await res.json()).error, contentType).toEqual({ code: 'bad_request', message: 'Content-Type must be application/json.' })
    }
  })

  it('rejects bodies that are not a JSON object with only keyPrefix, name and allowedCidrs', async () => {
    const headers = { ...(await t.session([W1])), 'content-type': 'application/json' }
    const post = async (body: string) => {
      const res = await t.request('/v1/apiKey', { method: 'POST', headers, body })
      return { status: res.status, body: await res.json() }
    }
    const bad = (message: string) => ({ status: 400, body: { status: 'error', error: { code: 'bad_request', message }, server_time_ms: expect.any(Number) } })
    expect(await post('{"key_prefix":"x"}')).toEqual(bad('Unknown field "key_prefix"; the body may only hold "keyPrefix", "name" and "allowedCidrs".'))
    expect(await post('{nope')).toEqual(bad('The request body is not valid JSON.'))
    expect(await post('["x"]')).toEqual(bad('The request body must be a JSON object.'))
    expect(await t.db.prisma.apiKey.count()).toBe(0)
  })

  it('inspects the active key without its secret, and answers null without one', async () => {
    expect((await t.get(W1)).body).toEqual(ok(null))
    const { data } = (await t.create(W1, { keyPrefix: 'bot' })).body
    const { apiKey: _secret, ...record } = data
    const got = await t.get(W1)
    expect(got).toEqual({ status: 200, body: ok(record), headers: expect.anything() })
    expect(JSON.stringify(got.body)).not.toContain(data.apiKey.slice(4))
    expect((await t.get(W2)).body).toEqual(ok(null))
  })

  it('revokes: revoked true, then null, then revoked false', async () => {
    const { data } = (await t.create(W1)).body
    time.advance(1000)
    expect(await t.revoke(W1)).toMatchObject({ status: 200, body: ok({ revoked: true }) })
    expect((await t.get(W1)).body).toEqual(ok(null))
    expect((await t.revoke(W1)).body).toEqual(ok({ revoked: false }))
    const row = await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: data.id } })
    expect([row.revokedAt, row.revokeReason]).toEqual([new Date(time.now()), 'user'])
    expect((await events()).map((e) => [e.action, e.reason, e.actor, e.keyId])).toEqual([
      ['created', null, W1, data.id],
      ['revoked', 'user', W1, data.id],
    ])
  })

  it('replaces: creating again revokes the previous key in the same transaction', async () => {
    const first = (await t.create(W1)).body.data
    time.advance(1000)
    const second = (await t.create(W1)).body.data
    expect(second.id).not.toBe(first.id)
    expect((await t.get(W1)).body.data.id).toBe(second.id)
    const rows = await t.db.prisma.apiKey.findMany({ orderBy: { createdAt: 'asc' }, select: { id: true, revokedAt: true, revokeReason: true } })
    expect(rows).toEqual([
      { id: first.id, revokedAt: new Date(time.now()), revokeReason: 'replaced' },
      { id: second.id, revokedAt: null, revokeReason: null },
    ])
    expect((await events()).map((e) => [e.action, e.reason, e.keyId])).toEqual([
      ['created', null, first.id],
      ['revoked', 'replaced', first.id],
      ['created', null, second.id],
    ])
    // The other wallet's keys are untouched.
    const other = (await t.create(W2)).body.data
    expect((await t.get(W1)).body.data.id).toBe(second.id)
    expect((await t.get(W2)).body.data.id).toBe(other.id)
  })

  it('expires 30 days after creation: GET answers null, DELETE answers false and records the expiry', async () => {
    const { data } = (await t.create(W1)).body
    time.set(data.expiresAtMs - 1)
    expect((await t.get(W1)).body.data.id).toBe(data.id)
    time.set(data.expiresAtMs)
    expect((await t.get(W1)).body).toEqual(ok(null))
    expect((await t.revoke(W1)).body).toEqual(ok({ revoked: false }))
    const row = await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: data.id } })
    expect(row.revokeReason).toBe('expired')
    expect((await events()).at(-1)).toMatchObject({ action: 'revoked', reason: 'expired', keyId: data.id })
  })

  it('revokes an expired, unrevoked key with reason expired when a new key is created', async () => {
    const old = (await t.create(W1)).body.data
    time.advance(KEY_LIFETIME_MS + 5000)
    const fresh = (await t.create(W1)).body.data
    expect((await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: old.id } })).revokeReason).toBe('expired')
    expect((await t.get(W1)).body.data.id).toBe(fresh.id)
  })

  it('refuses a wallet that left the allowlist', async () => {
    await t.db.prisma.allowlistEntry.delete({ where: { address: W2 } })
    try {
      expect((await t.create(W2)).status).toBe(403)
      expect(await t.db.prisma.apiKey.count({ where: { wallet: W2 } })).toBe(0)
    } finally {
      await t.db.prisma.allowlistEntry.create({ data: { address: W2 } })
    }
  })

  it('keeps at most one unrevoked key per wallet in the database itself (partial unique index)', async () => {
    const { data } = (await t.create(W1)).body
    const row = await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: data.id } })
    await expect(t.db.prisma.apiKey.create({ data: { ...row, id: '00000000-0000-4000-8000-000000000001', digest: 'other' } })).rejects.toMatchObject({
      code: 'P2002',
    })
  })
})

describe(`API key operations over GraphQL (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W1] })
  })
  afterAll(() => t.close())

  it('creates, inspects and revokes with the same rules', async () => {
    const headers = await t.session([W1])
    const created = await t.graphql(
      'mutation ($p: String) { createApiKey(keyPrefix: $p) { id keyPrefix createdAtMs expiresAtMs revokedAtMs apiKey } }',
      { p: 'gql' },
      headers,
    )
    const key = created.body.data.createApiKey
    expect(created.body).toEqual(
      answered({
        createApiKey: {
          id: expect.stringMatching(UUID),
          keyPrefix: 'gql',
          createdAtMs: time.now(),
          expiresAtMs: time.now() + KEY_LIFETIME_MS,
          revokedAtMs: null,
          apiKey: expect.stringMatching(/^gql_/),
        },
      }),
    )
    const { apiKey: _secret, ...record } = key
    expect((await t.graphql('{ apiKey { id keyPrefix createdAtMs expiresAtMs revokedAtMs } }', {}, headers)).body).toEqual(answered({ apiKey: record }))
    // The secret is not part of the inspectable type at all.
    const leak = await t.graphql('{ apiKey { apiKey } }', {}, headers)
    expect(leak.body.errors[0]).toMatchObject({ message: 'Cannot query field "apiKey" on type "ApiKey".', extensions: { code: 'bad_request' } })
    expect((await t.graphql('mutation { revokeApiKey { revoked } }', {}, headers)).body).toEqual(answered({ revokeApiKey: { revoked: true } }))
    expect((await t.graphql('mutation { revokeApiKey { revoked } }', {}, headers)).body).toEqual(answered({ revokeApiKey: { revoked: false } }))
    expect((await t.graphql('{ apiKey { id } }', {}, headers)).body).toEqual(answered({ apiKey: null }))
  })
})
