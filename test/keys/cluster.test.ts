import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectApiKeyVerifier, createApiKeyVerifier } from '../../src/keys/verifier.js'
import { createLogger, setLogger } from '../../src/core/log.js'
import { freshStorage, testBackend } from '../support/db.js'
import { jwksOf, signSession, testKey, type TestKey } from '../support/jwt.js'
import { createKeysTestApp, INTERNAL_TOKEN, manualClock, type KeysTestApp } from '../support/keys.js'
import { startGatewayProcess, type GatewayProcess } from '../support/process.js'
import { eventually } from '../support/eventually.js'

// Revocations reach other instances through PostgreSQL LISTEN/NOTIFY, not only after the 30 s refresh.

setLogger(createLogger('silent'))

const W = '0x7777777777777777777777777777777777777777'

/** Whether `check` holds within `ms` (the push's bound is part of what these tests claim). */
const within = (ms: number, check: () => Promise<boolean>) =>
  eventually(check, { timeoutMs: ms }).then(
    () => true,
    () => false,
  )

describe.runIf(testBackend === 'postgres')('key changes pushed between verifiers (postgres)', () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W] })
  })
  afterAll(() => t.close())

  // A second instance: its own cache, no in-process signal from the app, a clock that never moves
  // (so the 30 s refresh cannot be what it sees).
  const remote = () => createApiKeyVerifier({ prisma: t.db.prisma, clock: time.clock, localInvalidation: false, listen: { ...t.db.pool!.options } })

  it('refuses a key revoked elsewhere within 1 s', async () => {
    const other = remote()
    try {
      await other.ready
      const key = (await t.create(W)).body.data
      expect((await other.verify(key.apiKey)).active).toBe(true)
      await t.revoke(W)
      expect(await within(1000, async () => (await other.verify(key.apiKey)).reason === 'revoked')).toBe(true)
    } finally {
      await other.close()
    }
  })

  it('works as a library in another service, with its own connections (connectApiKeyVerifier)', async () => {
    const exchange = connectApiKeyVerifier({ databaseUrl: t.db.pool!.options.connectionString!, clock: time.clock })
    try {
      await exchange.ready
      const key = (await t.create(W)).body.data
      expect(await exchange.verify(key.apiKey)).toEqual({
        active: true,
        wallet: W,
        keyId: key.id,
        expiresAtMs: key.expiresAtMs,
        expiresInMs: key.expiresAtMs - time.now(),
        reason: null,
        rateLimit: null,
      })
      expect(await exchange.verify(key.apiKey.slice(0, -1) + (key.apiKey.endsWith('z') ? 'y' : 'z'))).toMatchObject({ active: false, reason: 'unknown' })
      await t.revoke(W)
      expect(await within(1000, async () => (await exchange.verify(key.apiKey)).reason === 'revoked')).toBe(true)
    } finally {
      await exchange.close()
    }
  })

  it('as a library: refuses a key outside its networks, and records usage and last use through its own pool', async () => {
    const exchange = connectApiKeyVerifier({ databaseUrl: t.db.pool!.options.connectionString!, clock: time.clock, usageFlushMs: 0 })
    const key = (await t.create(W, { allowedCidrs: ['192.0.2.0/24'] })).body.data
    try {
      expect(await exchange.verify(key.apiKey, { clientIp: '::ffff:192.0.2.10' })).toMatchObject({ active: true, reason: null })
      expect(await exchange.verify(key.apiKey, { clientIp: '198.51.100.1' })).toMatchObject({ active: false, reason: 'ip_not_allowed', keyId: key.id })
      expect(await exchange.verify(key.apiKey)).toMatchObject({ active: false, reason: 'ip_not_allowed' })
    } finally {
      // Written when it closes (usageFlushMs 0: no timer).
      await exchange.close()
    }
    const rows = await t.db.prisma.$queryRawUnsafe<{ outcome: string; count: string }[]>(
      'SELECT outcome::text AS outcome, count::text AS count FROM api_key_usage WHERE key_id = $1::uuid ORDER BY outcome',
      key.id,
    )
    expect(rows).toEqual([
      { outcome: 'active', count: '1' },
      { outcome: 'ip_not_allowed', count: '2' },
    ])
    expect((await t.get(W)).body.data.lastUsedAtMs).toBe(time.now())
  })

  it('reconnects after losing its LISTEN connection, and forgets what it may have missed', async () => {
    const other = remote()
    try {
      await other.ready
      const key = (await t.create(W)).body.data
      expect((await other.verify(key.apiKey)).active).toBe(true)
      const admin = new pg.Client({ ...t.db.pool!.options })
      await admin.connect()
      try {
        const { rowCount } = await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'vaultgate-listen' AND datname = current_database()`,
        )
        expect(rowCount).toBeGreaterThanOrEqual(1)
      } finally {
        await admin.end()
      }
      await t.revoke(W)
      expect(await within(5000, async () => (await other.verify(key.apiKey)).reason === 'revoked')).toBe(true)
      // And it listens again: the next revocation arrives by notification.
      const next = (await t.create(W)).body.data
      expect((await other.verify(next.apiKey)).active).toBe(true)
      await t.revoke(W)
      expect(await within(1000, async () => (await other.verify(next.apiKey)).reason === 'revoked')).toBe(true)
    } finally {
      await other.close()
    }
  })
})

describe.runIf(testBackend === 'postgres')('two gateway processes on one PostgreSQL database', () => {
  let dir: string
  let signer: TestKey
  let a: GatewayProcess
  let b: GatewayProcess
  let databaseUrl: string

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-cluster-'))
    signer = await testKey('ES256', 'k1')
    const file = path.join(dir, 'jwks.json')
    await writeFile(file, JSON.stringify(jwksOf(signer)))
    const storage = await freshStorage()
    if (storage.mode !== 'postgres') throw new Error('unreachable')
    databaseUrl = storage.url
    const env = { DATABASE_URL: storage.url, AUTH_JWKS_FILE: file, INTERNAL_TOKEN, ALLOWLIST: W, SEED_DEMO: 'false' }
    ;[a, b] = await Promise.all([startGatewayProcess(env), startGatewayProcess(env)])
  })
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await rm(dir, { recursive: true, force: true })
  })

  const session = async () => ({ authorization: `Bearer ${await signSession(signer, { wallets: [W] })}`, 'content-type': 'application/json' })
  const verify = async (gw: GatewayProcess, apiKey: string) => {
    const res = await fetch(`${gw.url}/internal/v1/apiKey/verify`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
      body: JSON.stringify({ apiKey }),
    })
    return (await res.json()).data as { active: boolean; reason: string | null }
  }

  it('a revocation on one is refused by the other within 1 s', async () => {
    const created = await fetch(`${a.url}/v1/apiKey`, { method: 'POST', headers: await session(), body: '{}' })
    const key = (await created.json()).data
    expect(await verify(b, key.apiKey)).toMatchObject({ active: true })
    const revoked = await fetch(`${a.url}/v1/apiKey`, { method: 'DELETE', headers: await session() })
    expect((await revoked.json()).data).toEqual({ revoked: true })
    expect(await within(1000, async () => (await verify(b, key.apiKey)).reason === 'revoked')).toBe(true)
  })

  it('concurrent creates split over both processes leave exactly one active key, the last committed', async () => {
    const headers = await session()
    const results = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const res = await fetch(`${(i % 2 ? a : b).url}/v1/apiKey`, { method: 'POST', headers, body: '{}' })
        return { status: res.status, body: await res.json() }
      }),
    )
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(200))
    const verdicts = await Promise.all(
      results.map(async (r) => ({ id: r.body.data.id, a: await verify(a, r.body.data.apiKey), b: await verify(b, r.body.data.apiKey) })),
    )
    const activeOnA = verdicts.filter((v) => v.a.active).map((v) => v.id)
    const activeOnB = verdicts.filter((v) => v.b.active).map((v) => v.id)
    expect(activeOnA).toHaveLength(1)
    expect(activeOnB).toEqual(activeOnA)
    const db = new pg.Client({ connectionString: databaseUrl })
    await db.connect()
    try {
      const { rows } = await db.query<{ key_id: string }>(`SELECT key_id::text FROM key_events WHERE action = 'created' ORDER BY id DESC LIMIT 1`)
      expect(activeOnA).toEqual([rows[0]!.key_id])
      const { rows: unrevoked } = await db.query(`SELECT id FROM api_keys WHERE wallet = $1 AND revoked_at IS NULL`, [W])
      expect(unrevoked).toHaveLength(1)
    } finally {
      await db.end()
    }
  })
})
