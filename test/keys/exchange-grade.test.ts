import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { KEY_LIFETIME_MS } from '../../src/keys/format.js'
import { testBackend } from '../support/db.js'
import { createKeysTestApp, INTERNAL_TOKEN, manualClock, type KeysTestApp } from '../support/keys.js'
import { recordSql } from '../support/sql.js'

// docs/spec/decisions.md §13: names, IP allowlists, last use, expiry warning, history and usage,
// within the spec's key rules (one active key; create revokes the previous key in its transaction).

const W1 = '0x1900000000000000000000000000000000000001'
const W2 = '0x1900000000000000000000000000000000000002'
const DAY = 86_400_000
const ok = (data: unknown) => ({ status: 'ok', data, server_time_ms: expect.any(Number) })
const bad = (message: string) => ({ status: 'error', error: { code: 'bad_request', message }, server_time_ms: expect.any(Number) })

describe(`API keys with names and IP allowlists (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W1, W2] })
  })
  afterAll(() => t.close())
  beforeEach(async () => {
    t.app.verifier.clear()
    await t.db.prisma.keyEvent.deleteMany()
    await t.db.prisma.apiKey.deleteMany()
  })

  const verify = async (apiKey: string, clientIp?: unknown) => {
    const res = await t.request('/internal/v1/apiKey/verify', {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(clientIp === undefined ? { apiKey } : { apiKey, clientIp }),
    })
    return { status: res.status, body: await res.json(), headers: res.headers }
  }

  it('creates a key with a name and canonical networks, shown by create and GET, and still revokes the previous key in the same transaction', async () => {
    const first = (await t.create(W1)).body.data
    const created = await t.create(W1, {
      keyPrefix: 'desk',
      name: 'Market maker — desk 1',
      allowedCidrs: ['203.0.113.77/24', '2001:DB8:0:0:0:0:0:1/32', '198.51.100.7', '::ffff:192.0.2.1/120', '203.0.113.0/24', '2001:db8::5/128'],
    })
    expect(created.status).toBe(200)
    const allowedCidrs = ['203.0.113.0/24', '2001:db8::/32', '198.51.100.7/32', '192.0.2.0/24', '2001:db8::5/128']
    expect(created.body.data).toMatchObject({
      keyPrefix: 'desk',
      name: 'Market maker — desk 1',
      allowedCidrs,
      lastUsedAtMs: null,
      expiresInMs: KEY_LIFETIME_MS,
    })
    time.advance(1000)
    expect((await t.get(W1)).body).toEqual(
      ok({
        id: created.body.data.id,
        keyPrefix: 'desk',
        createdAtMs: time.now() - 1000,
        expiresAtMs: time.now() - 1000 + KEY_LIFETIME_MS,
        revokedAtMs: null,
        name: 'Market maker — desk 1',
        allowedCidrs,
        lastUsedAtMs: null,
        expiresInMs: KEY_LIFETIME_MS - 1000,
      }),
    )
    // Spec §4 rule 2 stands: the creation revoked the first key, in its transaction, with one audit pair.
    const rows = await t.db.prisma.keyEvent.findMany({ orderBy: { id: 'asc' }, select: { keyId: true, action: true, reason: true } })
    expect(rows).toEqual([
      { keyId: first.id, action: 'created', reason: null },
      { keyId: first.id, action: 'revoked', reason: 'replaced' },
      { keyId: created.body.data.id, action: 'created', reason: null },
    ])
    expect(await t.db.prisma.apiKey.count({ where: { wallet: W1, revokedAt: null } })).toBe(1)
  })

  it('creates the same over GraphQL', async () => {
    const { body } = await t.graphql(
      'mutation { createApiKey(keyPrefix: "gql", name: "bot", allowedCidrs: ["10.1.2.3/8", "::/0"]) { keyPrefix name allowedCidrs lastUsedAtMs expiresInMs apiKey } }',
      {},
      await t.session([W1]),
    )
    expect(body.data.createApiKey).toMatchObject({
      keyPrefix: 'gql',
      name: 'bot',
      allowedCidrs: ['10.0.0.0/8', '::/0'],
      lastUsedAtMs: null,
      expiresInMs: KEY_LIFETIME_MS,
    })
    const read = await t.graphql('{ apiKey { name allowedCidrs expiresInMs } }', {}, await t.session([W1]))
    expect(read.body.data.apiKey).toEqual({ name: 'bot', allowedCidrs: ['10.0.0.0/8', '::/0'], expiresInMs: KEY_LIFETIME_MS })
  })

  it('refuses malformed names and networks with 400 bad_request in the spec envelope, and writes nothing', async () => {
    const cases: [unknown, string][] = [
      [{ allowedCidrs: ['10.0.0.0/33'] }, 'allowedCidrs: "10.0.0.0/33" has a prefix length outside 0-32.'],
      [{ allowedCidrs: ['2001:db8::/129'] }, 'allowedCidrs: "2001:db8::/129" has a prefix length outside 0-128.'],
      [{ allowedCidrs: ['10.0.0.0/08'] }, 'allowedCidrs: "10.0.0.0/08" has a prefix length outside 0-32.'],
      [{ allowedCidrs: ['10.0.0.0/'] }, 'allowedCidrs: "10.0.0.0/" has a prefix length outside 0-32.'],
      [{ allowedCidrs: ['010.0.0.1/32'] }, 'allowedCidrs: "010.0.0.1/32" is not an IPv4 or IPv6 network such as "203.0.113.0/24" or "2001:db8::/32".'],
      [{ allowedCidrs: ['256.0.0.0/8'] }, 'allowedCidrs: "256.0.0.0/8" is not an IPv4 or IPv6 network such as "203.0.113.0/24" or "2001:db8::/32".'],
      [{ allowedCidrs: ['fe80::1%eth0/64'] }, 'allowedCidrs: "fe80::1%eth0/64" is not an IPv4 or IPv6 network such as "203.0.113.0/24" or "2001:db8::/32".'],
      [{ allowedCidrs: ['10.0.0.0/8 '] }, 'allowedCidrs: "10.0.0.0/8 " has a prefix length outside 0-32.'],
      [{ allowedCidrs: ['example.com'] }, 'allowedCidrs: "example.com" is not an IPv4 or IPv6 network such as "203.0.113.0/24" or "2001:db8::/32".'],
      [{ allowedCidrs: Array.from({ length: 31 }, (_, i) => `10.0.${i}.0/24`) }, 'allowedCidrs may hold at most 30 networks.'],
      [{ allowedCidrs: '10.0.0.0/8' }, 'allowedCidrs must be a list of strings; leave it out for a key usable from any IP.'],
      [{ allowedCidrs: [42] }, 'allowedCidrs must be a list of strings; leave it out for a key usable from any IP.'],
      [{ allowedCidrs: null }, 'allowedCidrs must be a list of strings; leave it out for a key usable from any IP.'],
      [{ name: '' }, 'name must be 1 to 64 printable characters, without leading or trailing spaces.'],
      [{ name: 'x'.repeat(65) }, 'name must be 1 to 64 printable characters, without leading or trailing spaces.'],
      [{ name: 'tab\there' }, 'name must be 1 to 64 printable characters, without leading or trailing spaces.'],
      [{ name: 'nul\u0000' }, 'name must be 1 to 64 printable characters, without leading or trailing spaces.'],
      [{ name: 'rtl\u202Eevil' }, 'name must be 1 to 64 printable characters, without leading or trailing spaces.'],
      [{ name: ' padded' }, 'name must be 1 to 64 printable characters, without leading or trailing spaces.'],
      [{ name: 7 }, 'name must be a string; leave it out for a key without one.'],
    ]
    for (const [body, message] of cases) expect([body, await t.create(W1, body)]).toMatchObject([body, { status: 400, body: bad(message) }])
    expect(await t.db.prisma.apiKey.count()).toBe(0)
    // 30 networks and a 64-character name (code points, not UTF-16 units) are fine.
    const edge = await t.create(W1, { name: '🔑'.repeat(64), allowedCidrs: Array.from({ length: 30 }, (_, i) => `10.0.${i}.0/24`) })
    expect([edge.status, edge.body.data.allowedCidrs.length]).toEqual([200, 30])
    const gql = await t.graphql('mutation { createApiKey(allowedCidrs: ["1.2.3.4/40"]) { id } }', {}, await t.session([W1]))
    expect(gql.body.errors[0]).toMatchObject({ message: 'allowedCidrs: "1.2.3.4/40" has a prefix length outside 0-32.', extensions: { code: 'bad_request' } })
    // The mutation's arguments are read with the REST body's schema (src/keys/inputs.ts): the same rules, the same messages.
    const token = await t.session([W1])
    // (GraphQL types the arguments: only the cases with strings where strings belong; a lone string is coerced to a list.)
    const typed = ([k, v]: [string, unknown]) => (k === 'name' ? typeof v === 'string' : Array.isArray(v) && v.every((c) => typeof c === 'string'))
    for (const [body, message] of cases.filter(([b]) => Object.entries(b as object).every(typed))) {
      const args = Object.entries(body as object).map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
      const answer = await t.graphql(`mutation { createApiKey(${args.join(', ')}) { id } }`, {}, token)
      expect([body, answer.body.errors?.[0]]).toMatchObject([body, { message, extensions: { code: 'bad_request' } }])
    }
  })

  it('verifies by client IP: IPv4-mapped IPv6 matches IPv4 networks, /32 and /128 are one host, families stay apart', async () => {
    const key = (await t.create(W1, { allowedCidrs: ['203.0.113.0/24', '198.51.100.7/32', '2001:db8:1::/48', '2001:db8::5/128'] })).body.data
    const outcome = async (ip?: unknown) => {
      const { body } = await verify(key.apiKey, ip)
      return body.data.active ? 'active' : body.data.reason
    }
    const expected: [string | undefined, string][] = [
      ['203.0.113.1', 'active'],
      ['203.0.113.255', 'active'],
      ['::ffff:203.0.113.9', 'active'],
      ['::FFFF:cb00:7109', 'active'],
      ['0:0:0:0:0:ffff:203.0.113.9', 'active'],
      ['203.0.114.1', 'ip_not_allowed'],
      ['198.51.100.7', 'active'],
      ['198.51.100.8', 'ip_not_allowed'],
      ['::ffff:198.51.100.7', 'active'],
      ['2001:db8:1:ffff::1', 'active'],
      ['2001:db8:2::1', 'ip_not_allowed'],
      ['2001:db8::5', 'active'],
      ['2001:db8::6', 'ip_not_allowed'],
      ['fe80::1%eth0', 'ip_not_allowed'],
      [undefined, 'ip_not_allowed'],
    ]
    const got = []
    for (const [ip] of expected) got.push([ip, await outcome(ip)])
    expect(got).toEqual(expected)
    expect((await verify(key.apiKey, '10.0.0.1')).body.data).toMatchObject({ active: false, wallet: W1, keyId: key.id, reason: 'ip_not_allowed' })

    // /0 of one family allows all of that family only.
    const v4all = (await t.create(W1, { allowedCidrs: ['0.0.0.0/0'] })).body.data
    const v6all = (await t.create(W2, { allowedCidrs: ['::/0'] })).body.data
    const reasons = async (apiKey: string) =>
      Promise.all(['255.255.255.255', '0.0.0.0', '::ffff:1.2.3.4', '::1', '2001:db8::1'].map(async (ip) => (await verify(apiKey, ip)).body.data.reason))
    expect(await reasons(v4all.apiKey)).toEqual([null, null, null, 'ip_not_allowed', 'ip_not_allowed'])
    expect(await reasons(v6all.apiKey)).toEqual(['ip_not_allowed', 'ip_not_allowed', 'ip_not_allowed', null, null])

    // A key without networks takes any IP, or none; a malformed clientIp is a 400 whatever the key.
    const open = (await t.create(W2)).body.data
    expect((await verify(open.apiKey)).body.data.active).toBe(true)
    expect((await verify(open.apiKey, '192.0.2.1')).body.data.active).toBe(true)
    for (const ip of ['10.0.0.256', '1.2.3', '010.1.1.1', 'localhost', '', 42, 'x'.repeat(65)]) {
      expect([ip, await verify(open.apiKey, ip)]).toMatchObject([ip, { status: 400, body: bad('clientIp must be an IPv4 or IPv6 address.') }])
    }
  })

  it('reports the key rate limit on every verify answer, and counts each verification of the key', async () => {
    const key = (await t.create(W1)).body.data
    const first = (await verify(key.apiKey)).body.data.rateLimit
    const second = (await verify(key.apiKey)).body.data.rateLimit
    expect(first).toEqual({ limit: 1200, remaining: expect.any(Number), resetMs: expect.any(Number) })
    expect(second.remaining).toBe(first.remaining - 1)
    expect(second.resetMs).toBeLessThanOrEqual(60_000)
  })

  it('warns in a Key-Expires-Soon header during the last 3 days of an active key, and only then', async () => {
    const key = (await t.create(W1)).body.data
    time.set(key.expiresAtMs - 3 * DAY - 1)
    const before = await verify(key.apiKey)
    expect([before.body.data.expiresInMs, before.headers.get('key-expires-soon')]).toEqual([3 * DAY + 1, null])
    time.set(key.expiresAtMs - 3 * DAY)
    const soon = await verify(key.apiKey)
    expect([soon.body.data.active, soon.headers.get('key-expires-soon')]).toEqual([true, String(3 * DAY)])
    time.set(key.expiresAtMs - 5)
    expect((await verify(key.apiKey)).headers.get('key-expires-soon')).toBe('5')
    time.set(key.expiresAtMs)
    const expired = await verify(key.apiKey)
    expect([expired.body.data.reason, expired.body.data.expiresInMs, expired.headers.get('key-expires-soon')]).toEqual(['expired', 0, null])
    // Inactive for another reason: no warning either.
    time.set(key.expiresAtMs - DAY)
    await t.revoke(W1)
    expect((await verify(key.apiKey)).headers.get('key-expires-soon')).toBeNull()
    time.set(Date.UTC(2026, 10, 22, 12))
  })
})

describe(`lastUsedAtMs: written off the hot path, at most once a minute per key (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  let second: App | undefined
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W1, W2] })
    // Counts every row write of last_used_at, whoever sends it.
    await t.db.prisma.$executeRawUnsafe('CREATE TABLE last_used_writes (key_id uuid, at timestamptz(3))')
    await t.db.prisma.$executeRawUnsafe(
      `CREATE FUNCTION log_last_used() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO last_used_writes VALUES (NEW.id, NEW.last_used_at); RETURN NEW; END $$`,
    )
    await t.db.prisma.$executeRawUnsafe('CREATE TRIGGER log_last_used AFTER UPDATE OF last_used_at ON api_keys FOR EACH ROW EXECUTE FUNCTION log_last_used()')
  })
  afterAll(async () => {
    await second?.close()
    await t.close()
  })

  const writes = async () =>
    (await t.db.prisma.$queryRawUnsafe<{ key_id: string; at: Date }[]>('SELECT key_id::text AS key_id, at FROM last_used_writes ORDER BY at')).map((r) => ({
      keyId: r.key_id,
      at: r.at.getTime(),
    }))

  it('1,000 verifications over 5 minutes: no SQL but key reads while verifying, one statement per flush, at most one write per key per minute', async () => {
    const start = time.now()
    const k1 = (await t.create(W1)).body.data
    const k2 = (await t.create(W2)).body.data
    const verifyStatements: string[] = []
    const flushStatements: string[] = []
    let flushes = 0
    let lastOk = 0
    let nextFlush = start + 10_000
    for (let i = 0; i < 1000; i++) {
      const key = i % 2 === 0 ? k1 : k2
      const { result, statements } = await recordSql(() => t.verify(key.apiKey))
      expect(result.body.data.active).toBe(true)
      verifyStatements.push(...statements)
      lastOk = time.now()
      time.advance(300)
      // The timer's work, run on the test's clock: every 10 s of it.
      if (time.now() >= nextFlush) {
        nextFlush += 10_000
        flushStatements.push(...(await recordSql(() => t.app.keyUsage.flush())).statements)
        flushes++
      }
    }
    // Only key-state reads on the verification path: one per key per 30 s cache lifetime.
    expect(verifyStatements.every((sql) => /FROM api_keys k LEFT JOIN allowlist/.test(sql))).toBe(true)
    expect(verifyStatements.length).toBeLessThanOrEqual(2 * (300 / 30 + 1))
    expect(flushes).toBe(30)
    expect(flushStatements).toHaveLength(30)
    expect(flushStatements.every((sql) => sql.includes('UPDATE api_keys k SET last_used_at'))).toBe(true)

    const all = await writes()
    const writesOf = (id: string) => all.filter((w) => w.keyId === id).map((w) => w.at)
    for (const key of [k1, k2]) {
      const at = writesOf(key.id)
      // 5 minutes: at most 5 writes, each at least a minute after the one before.
      expect(at.length).toBeGreaterThanOrEqual(4)
      expect(at.length).toBeLessThanOrEqual(5)
      for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(60_000)
    }
    // What the owner sees: a successful verification at most a minute older than the last one.
    const shown = (await t.get(W1)).body.data.lastUsedAtMs
    expect(lastOk - shown).toBeLessThan(60_000 + 600)
    expect(shown).toBe(writesOf(k1.id).at(-1))
  })

  it('holds across instances: two verifiers of one database write a key at most once a minute between them', async () => {
    await t.db.prisma.$executeRawUnsafe('DELETE FROM last_used_writes')
    second = createApp({ config: t.config, db: t.db, clock: time.clock })
    await second.ready
    const key = (await t.create(W1)).body.data
    const start = time.now()
    for (let i = 0; i < 400; i++) {
      const instance = i % 2 === 0 ? t.app : second
      const res = await instance.fetch(
        new Request('http://vaultgate.test/internal/v1/apiKey/verify', {
          method: 'POST',
          headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ apiKey: key.apiKey }),
        }),
      )
      expect(res.status).toBe(200)
      time.advance(500)
      // The two instances' timers, out of step.
      if ((time.now() - start) % 10_000 === 0) await t.app.keyUsage.flush()
      if ((time.now() - start) % 10_000 === 5_000) await second.keyUsage.flush()
    }
    const at = (await writes()).filter((w) => w.keyId === key.id).map((w) => w.at)
    // 200 s of use: 3 or 4 writes, a minute or more apart, whichever instance sent them.
    expect(at.length).toBeGreaterThanOrEqual(3)
    expect(at.length).toBeLessThanOrEqual(4)
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(60_000)
  })

  it('is not touched by refused verifications', async () => {
    const key = (await t.create(W2, { allowedCidrs: ['10.0.0.0/8'] })).body.data
    for (let i = 0; i < 5; i++) {
      const res = await t.request('/internal/v1/apiKey/verify', {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: key.apiKey, clientIp: '192.0.2.1' }),
      })
      expect((await res.json()).data.reason).toBe('ip_not_allowed')
      time.advance(61_000)
      await t.app.keyUsage.flush()
    }
    expect((await t.get(W2)).body.data.lastUsedAtMs).toBeNull()
  })
})

describe(`usage per key and UTC day (${testBackend})`, () => {
  const time = manualClock(Date.UTC(2026, 10, 22, 23, 59, 0))
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W1, W2] })
  })
  afterAll(() => t.close())

  const usage = async (wallet: string, query = '') => {
    const res = await t.request(`/v1/apiKey/usage${query}`, { headers: await t.session([wallet]) })
    return { status: res.status, body: await res.json() }
  }
  const counts = (c: Partial<Record<string, number>>) => ({ active: 0, revoked: 0, expired: 0, not_whitelisted: 0, ip_not_allowed: 0, ...c })
  const verifyAs = async (app: App, apiKey: string, clientIp?: string) =>
    app.fetch(
      new Request('http://vaultgate.test/internal/v1/apiKey/verify', {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey, clientIp }),
      }),
    )

  it('counts verifications by outcome per key and UTC day, for the owner only, and they survive an instance restart', async () => {
    // The instance that verifies, then stops (the suite's own app only manages keys here).
    const before = createApp({ config: t.config, db: t.db, clock: time.clock })
    await before.ready
    const a = (await t.create(W1, { name: 'first', allowedCidrs: ['10.0.0.0/8'] })).body.data
    for (const ip of ['10.0.0.1', '10.0.0.2', '192.0.2.1']) await verifyAs(before, a.apiKey, ip)
    time.advance(2 * 60_000) // past midnight UTC: a new day
    await verifyAs(before, a.apiKey, '10.0.0.3')
    const b = (await t.create(W1)).body.data // replaces a
    await verifyAs(before, a.apiKey, '10.0.0.3')
    await verifyAs(before, b.apiKey)
    await verifyAs(before, `${b.apiKey.slice(0, -1)}${b.apiKey.endsWith('z') ? 'y' : 'z'}`) // unknown: nobody's
    // Before a flush nothing is written: no SQL on the verification path.
    expect((await usage(W1)).body.data.items).toEqual([])

    // A restart: the old instance writes what it holds when it closes, the new one reads it.
    await before.close()
    const restarted = createApp({ config: t.config, db: t.db, clock: time.clock })
    try {
      await restarted.ready
      const res = await restarted.fetch(new Request('http://vaultgate.test/v1/apiKey/usage?days=2', { headers: await t.session([W1]) }))
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual(
        ok({
          days: 2,
          since: '2026-11-22',
          items: [
            { day: '2026-11-23', keyId: b.id, keyPrefix: 'vaultgate', name: null, counts: counts({ active: 1 }), total: 1 },
            { day: '2026-11-23', keyId: a.id, keyPrefix: 'vaultgate', name: 'first', counts: counts({ active: 1, revoked: 1 }), total: 2 },
            { day: '2026-11-22', keyId: a.id, keyPrefix: 'vaultgate', name: 'first', counts: counts({ active: 2, ip_not_allowed: 1 }), total: 3 },
          ],
        }),
      )
      // days=1 is today only; another wallet sees none of it.
      const today = await restarted.fetch(new Request('http://vaultgate.test/v1/apiKey/usage?days=1', { headers: await t.session([W1]) }))
      expect((await today.json()).data.items.map((i: { day: string }) => i.day)).toEqual(['2026-11-23', '2026-11-23'])
      const other = await restarted.fetch(new Request('http://vaultgate.test/v1/apiKey/usage', { headers: await t.session([W2]) }))
      expect((await other.json()).data).toEqual({ days: 30, since: '2026-10-25', items: [] })
      // GraphQL: the same numbers.
      const gql = await restarted.fetch(
        new Request('http://vaultgate.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(await t.session([W1])) },
          body: JSON.stringify({
            query: '{ apiKeyUsage(days: 2) { since items { day keyId total counts { active revoked ipNotAllowed notWhitelisted expired } } } }',
          }),
        }),
      )
      expect((await gql.json()).data.apiKeyUsage.items[2]).toEqual({
        day: '2026-11-22',
        keyId: a.id,
        total: 3,
        counts: { active: 2, revoked: 0, ipNotAllowed: 1, notWhitelisted: 0, expired: 0 },
      })
    } finally {
      await restarted.close()
    }
  })

  it('takes days from 1 to 90 and refuses anything else with 400', async () => {
    for (const days of ['0', '91', '-1', 'abc', '1.5', '', '01']) {
      expect([days, await usage(W1, `?days=${days}`)]).toEqual([days, { status: 400, body: bad('days must be an integer from 1 to 90.') }])
    }
    expect((await usage(W1, '?days=90')).body.data.days).toBe(90)
    const gql = await t.graphql('{ apiKeyUsage(days: 0) { days } }', {}, await t.session([W1]))
    expect(gql.body.errors[0]).toMatchObject({ message: 'days must be an integer from 1 to 90.', extensions: { code: 'bad_request' } })
  })

  it('keeps 90 days: the retention job deletes older rows and keeps the 90th day', async () => {
    const key = (await t.create(W2)).body.data
    const today = Date.UTC(2026, 10, 23)
    const day = (n: number) => new Date(today - n * DAY).toISOString().slice(0, 10)
    for (const n of [0, 89, 90, 200]) {
      await t.db.prisma.$executeRawUnsafe(`INSERT INTO api_key_usage (key_id, day, outcome, count) VALUES ($1::uuid, $2::date, 'active', 7)`, key.id, day(n))
    }
    expect(await t.app.keyUsage.prune()).toBe(2)
    const left = await t.db.prisma.$queryRawUnsafe<{ day: string }[]>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day FROM api_key_usage WHERE key_id = $1::uuid ORDER BY day DESC`,
      key.id,
    )
    expect(left.map((r) => r.day)).toEqual([day(0), day(89)])
    expect((await usage(W2, '?days=90')).body.data.items.map((i: { day: string }) => i.day)).toEqual([day(0), day(89)])
  })
})

describe(`the owner's key history (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W1, W2] })
  })
  afterAll(() => t.close())

  const events = async (wallet: string, query = '') => {
    const res = await t.request(`/v1/apiKey/events${query}`, { headers: await t.session([wallet]) })
    return { status: res.status, body: await res.json() }
  }

  it('lists created, replaced, revoked, disabled and expired entries newest first, cursor-paged, and the same over GraphQL', async () => {
    const t0 = time.now()
    const a = (await t.create(W1, { keyPrefix: 'a' })).body.data
    time.advance(1000)
    const b = (await t.create(W1, { keyPrefix: 'b' })).body.data // replaces a
    time.advance(1000)
    await t.revoke(W1)
    time.advance(1000)
    const c = (await t.create(W1, { keyPrefix: 'c' })).body.data
    time.advance(1000)
    await t.unlist(W1) // disables c
    await t.db.prisma.allowlistEntry.create({ data: { address: W1 } })
    time.advance(1000)
    const d = (await t.create(W1, { keyPrefix: 'd' })).body.data
    await t.create(W2) // another wallet's history
    time.set(d.expiresAtMs + 5 * DAY) // d expires, unrevoked: no audit row for that
    const e = (await t.create(W1, { keyPrefix: 'e' })).body.data // writes d's revocation (reason expired), shown as its expiry

    const all = [
      { type: 'created', keyId: e.id, keyPrefix: 'e', atMs: time.now() },
      { type: 'expired', keyId: d.id, keyPrefix: 'd', atMs: d.expiresAtMs },
      { type: 'created', keyId: d.id, keyPrefix: 'd', atMs: t0 + 5000 },
      { type: 'disabled', keyId: c.id, keyPrefix: 'c', atMs: t0 + 4000 },
      { type: 'created', keyId: c.id, keyPrefix: 'c', atMs: t0 + 3000 },
      { type: 'revoked', keyId: b.id, keyPrefix: 'b', atMs: t0 + 2000 },
      { type: 'created', keyId: b.id, keyPrefix: 'b', atMs: t0 + 1000 },
      { type: 'replaced', keyId: a.id, keyPrefix: 'a', atMs: t0 + 1000 },
      { type: 'created', keyId: a.id, keyPrefix: 'a', atMs: t0 },
    ]
    expect((await events(W1)).body).toEqual(ok({ items: all, next_cursor: null }))

    const pages: unknown[] = []
    let cursor: string | null = null
    do {
      const { status, body }: { status: number; body: { data: { items: unknown[]; next_cursor: string | null } } } = await events(
        W1,
        `?limit=4${cursor ? `&cursor=${cursor}` : ''}`,
      )
      expect(status).toBe(200)
      pages.push(body.data.items)
      cursor = body.data.next_cursor
    } while (cursor)
    expect(pages).toEqual([all.slice(0, 4), all.slice(4, 8), all.slice(8)])

    const first = (await events(W1, '?limit=1')).body.data.next_cursor
    expect(await events(W2, `?cursor=${first}`)).toEqual({
      status: 400,
      body: bad('cursor was issued for a different wallet; start again from the first page.'),
    })
    expect(await events(W1, `?cursor=${first.slice(0, -2)}`)).toEqual({
      status: 400,
      body: bad('cursor is not a cursor this service issued; pass next_cursor exactly as received.'),
    })
    expect((await events(W1, '?limit=201')).body).toEqual(bad('limit must be an integer from 1 to 200.'))

    const gql = await t.graphql(
      'query($after: String) { apiKeyEvents(first: 3, after: $after) { edges { node { type keyId keyPrefix atMs } } pageInfo { hasNextPage endCursor } } }',
      { after: first },
      await t.session([W1]),
    )
    expect(gql.body.data.apiKeyEvents.edges.map((edge: { node: unknown }) => edge.node)).toEqual(all.slice(1, 4))
    expect(gql.body.data.apiKeyEvents.pageInfo.hasNextPage).toBe(true)
    const foreign = await t.graphql('query($after: String) { apiKeyEvents(after: $after) { edges { cursor } } }', { after: first }, await t.session([W2]))
    expect(foreign.body.errors[0]).toMatchObject({
      message: 'after was issued for a different wallet; start again from the first page.',
      extensions: { code: 'bad_request' },
    })
  })

  it('shows an expiry once it has happened, dated when the key stopped working', async () => {
    const k = (await t.create(W2, { keyPrefix: 'late' })).body.data
    time.set(k.expiresAtMs - 1)
    expect((await events(W2)).body.data.items[0]).toEqual({ type: 'created', keyId: k.id, keyPrefix: 'late', atMs: k.createdAtMs })
    time.set(k.expiresAtMs)
    expect((await events(W2)).body.data.items[0]).toEqual({ type: 'expired', keyId: k.id, keyPrefix: 'late', atMs: k.expiresAtMs })
    // Revoking after expiry (the key is closed as `expired`) adds nothing new.
    time.advance(DAY)
    expect((await t.revoke(W2)).body.data).toEqual({ revoked: false })
    expect((await events(W2)).body.data.items.filter((i: { keyId: string }) => i.keyId === k.id)).toEqual([
      { type: 'expired', keyId: k.id, keyPrefix: 'late', atMs: k.expiresAtMs },
      { type: 'created', keyId: k.id, keyPrefix: 'late', atMs: k.createdAtMs },
    ])
  })
})
