import { createHash } from 'node:crypto'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientError } from '../../src/http/errors.js'
import { digestOf } from '../../src/keys/format.js'
import { createLogger, logger, setLogger } from '../../src/core/log.js'
import { testBackend } from '../support/db.js'
import { rawJwt, signSession } from '../support/jwt.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { ADMIN_TOKEN, createKeysTestApp, INTERNAL_TOKEN, manualClock, type KeysTestApp } from '../support/keys.js'

// Everything the gateway logs (at trace level) while keys are created, used, refused and broken,
// searched for every form of every secret that passed through: raw keys, their secret halves, their
// digests (hex and base64), session tokens and their signatures, the admin and internal tokens.

const W = '0x5ec0000000000000000000000000000000000005'

describe(`secrets in logs (${testBackend})`, () => {
  const chunks: string[] = []
  const previous = logger
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    setLogger(
      createLogger(
        'trace',
        new Writable({
          write: (chunk, _enc, done) => {
            chunks.push(String(chunk))
            done()
          },
        }),
      ),
    )
    t = await createKeysTestApp({
      clock: time.clock,
      allowlist: [W],
      env: { RATE_LIMIT_KEYS_PER_MINUTE: '6', RATE_LIMIT_VERIFY_PER_MINUTE: '4', SLOW_QUERY_MS: '0' },
    })
  })
  afterAll(async () => {
    setLogger(previous)
    await t.app.close() // the test closed the database itself
  })

  const secrets = new Set<string>()
  function remember(...values: string[]) {
    for (const v of values) if (v.length >= 12) secrets.add(v)
  }
  function rememberKey(key: string) {
    const digest = digestOf(key)
    remember(
      key,
      key.slice(key.lastIndexOf('_') + 1),
      digest,
      Buffer.from(digest, 'hex').toString('base64'),
      createHash('sha256').update(key).digest('base64url'),
    )
  }

  it('holds no raw key, digest, session token or service token, whatever happens', async () => {
    const responses: string[] = []
    const keep = async (res: Response | { body: unknown }) => {
      const text = res instanceof Response ? await res.text() : JSON.stringify(res.body)
      responses.push(text)
      return text
    }
    const session = await t.session([W])
    const jwt = session.authorization!.slice('Bearer '.length)
    remember(jwt, jwt.split('.')[2]!, INTERNAL_TOKEN, ADMIN_TOKEN)

    // Creation, inspection and use, over REST and GraphQL.
    const first = await t.create(W, { keyPrefix: 'desk' })
    rememberKey(first.body.data.apiKey)
    const second = await t.graphql('mutation { createApiKey(keyPrefix: "bot") { apiKey } }', {}, session)
    rememberKey(second.body.data.createApiKey.apiKey)
    const key = second.body.data.createApiKey.apiKey as string
    await keep(await t.get(W))
    await keep(await t.verify(key))
    await keep(await t.verify(first.body.data.apiKey))

    // Refusals: forged, unsigned, expired and malformed tokens; a near-miss key; a wrong service token.
    const forged = `${jwt.slice(0, -6)}AAAAAA`
    const unsigned = rawJwt({ alg: 'none', typ: 'JWT' }, { wallets: [W], exp: 9_999_999_999 })
    const expired = await signSession(t.signer, { wallets: [W] }, { now: time.now() - 7_200_000 })
    remember(forged, unsigned, expired)
    for (const token of [forged, unsigned, expired, 'not-a-jwt-at-all-0123456789']) {
      await keep(await t.request('/v1/apiKey', { headers: { authorization: `Bearer ${token}` } }))
      await keep(
        await t.request('/graphql', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: '{"query":"{ apiKey { id } }"}',
        }),
      )
    }
    const nearMiss = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A')
    rememberKey(nearMiss)
    await keep(await t.verify(nearMiss))
    remember('wrong-internal-token-0123456789')
    await keep(
      await t.request('/internal/v1/apiKey/verify', {
        method: 'POST',
        headers: { authorization: 'Bearer wrong-internal-token-0123456789', 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: key }),
      }),
    )
    // A raw key sent where it does not belong: as a key prefix, and as a cursor.
    await keep(await t.create(W, { keyPrefix: key }))
    await keep(await t.request(`/v1/vaults?cursor=${encodeURIComponent(key)}`))

    // Limits: a wallet over its key budget, a key over its verification budget, an unlisted origin.
    for (let i = 0; i < 6; i++) await keep(await t.get(W))
    for (let i = 0; i < 4; i++) await keep(await t.verify(key))
    await keep(await t.request('/v1/apiKey', { headers: { ...session, origin: 'https://evil.example' } }))

    // Failures inside the key transaction (logged with their errors), then revocation and expiry.
    await t.db.prisma.$executeRawUnsafe(`CREATE FUNCTION refuse_keys() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no keys today'; END $$`)
    await t.db.prisma.$executeRawUnsafe(`CREATE TRIGGER refuse_keys BEFORE INSERT OR UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION refuse_keys()`)
    // Another wallet: the first one has used its key budget for this minute.
    const other = '0x5ec0000000000000000000000000000000000006'
    await t.db.prisma.allowlistEntry.create({ data: { address: other } })
    const failed = await t.create(other)
    expect(failed.status).toBe(500)
    await t.db.prisma.$executeRawUnsafe(`DROP TRIGGER refuse_keys ON api_keys`)
    time.advance(31 * 86_400_000)
    await keep(await t.verify(first.body.data.apiKey))
    await keep(await t.request('/metrics'))
    // Verification with the database gone: it fails closed, and says so in the log.
    await t.db.close()
    time.advance(30_000)
    const closed = await t.verify(nearMiss)
    expect(closed.status).toBe(503)
    await keep(closed)

    const log = chunks.join('')
    // The failures are logged (without their secrets): the failed create, the verification that could not read.
    expect(log).toContain('resolver failed')
    expect(log).toContain('API key verification unavailable')
    let bytesFound = 0
    const found: string[] = []
    for (const s of secrets) {
      const hits = log.split(s).length - 1
      if (hits > 0) found.push(`${s.slice(0, 8)}…`)
      bytesFound += hits * s.length
    }
    // Only the create answers carry the raw key; no other answer carries a key, digest or token.
    let leakedInAnswers = 0
    for (const r of responses) for (const s of secrets) if (r.includes(s)) leakedInAnswers++
    console.info(
      `[reliability] secrets in logs: ${chunks.length} log lines (${log.length} bytes) scanned for ${secrets.size} secret forms; bytes of secrets found in logs ${bytesFound}; answers other than the creates carrying one ${leakedInAnswers}`,
    )
    expect(log).toContain('resolver failed')
    expect(log).toContain('slow SQL statement')
    expect(found).toEqual([])
    expect(bytesFound).toBe(0)
    expect(leakedInAnswers).toBe(0)
  })
})

describe(`client strings in error logs (${testBackend})`, () => {
  const chunks: string[] = []
  const previous = logger
  let t: TestApp
  beforeAll(async () => {
    setLogger(
      createLogger(
        'trace',
        new Writable({
          write: (chunk, _enc, done) => {
            chunks.push(String(chunk))
            done()
          },
        }),
      ),
    )
    t = await createTestApp()
  })
  afterAll(async () => {
    setLogger(previous)
    await t.app.close() // the test closed the database itself
  })

  /** Every string field of every logged error, and every field named path. */
  const errorLines = () =>
    chunks
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, any>)
      .filter((l) => ['warn', 'error', 'fatal'].includes(l.level))

  it("holds PostgreSQL's sentence without the value it could not read, and no message longer than 128 characters", async () => {
    const value = `not-a-uuid-${'x'.repeat(300)}`
    const short = 'not-a-uuid-0123'
    for (const v of [value, short]) {
      const err = await t.db.prisma.$queryRawUnsafe('SELECT $1::uuid AS id', v).catch((e: unknown) => e)
      logger.error({ err }, `unexpected error ${v.length}`)
    }
    const [long, brief] = errorLines().slice(-2)
    expect(JSON.stringify(long)).not.toContain('x'.repeat(129))
    expect(long!.err.message).toMatch(/invalid input syntax for type uuid: \(a value of 311 characters/)
    expect(long!.err.message.length).toBeLessThanOrEqual(129)
    // An id-sized value is the useful part of the sentence and stays.
    expect(brief!.err.message).toContain(`"${short}"`)
    // Prisma's meta (the driver's original message, with the value) is not logged.
    expect(long!.err.meta).toBeUndefined()
  })

  it('logs a long request path and long GraphQL aliases by their length, while the database fails their reads', async () => {
    // A column the vault reads select, gone: the data times (src/freshness/store.ts) still read, so
    // the query below reaches its resolver and fails there (a database that is gone altogether now
    // fails the answer on reading its times, before any resolver: test/freshness/data-used.test.ts).
    await t.db.prisma.$executeRawUnsafe('ALTER TABLE vaults RENAME COLUMN strategy_brief TO strategy_brief_gone')
    const alias = `a${'b'.repeat(1000)}`
    const pathId = 'c'.repeat(2000)
    // GraphQL first: identical error lines within 10 s are written once (src/core/log.ts).
    const gql = await t.graphql(`{ ${alias}: vault(id: "v1") { id } }`)
    const rest = await t.request(`/v1/vaults/${pathId}`)
    expect([rest.status, gql.body.errors?.[0]?.extensions?.code]).toEqual([expect.any(Number), expect.stringMatching(/^(internal|unavailable)$/)])
    const text = chunks.join('')
    expect(text).not.toContain('b'.repeat(129))
    expect(text).not.toContain('c'.repeat(129))
    const lines = errorLines()
    // The aliased field's path names the alias by its length.
    expect(lines.filter((l) => l.msg === 'resolver failed').map((l) => l.path)).toContainEqual(['(a value of 1001 characters, not repeated here)'])
    // So does the path of a route's unexpected error (every route reaches the log through clientError).
    clientError(new Error('boom'), { requestId: 'r1', path: `/v1/vaults/${pathId}` })
    expect(errorLines().at(-1)).toMatchObject({ msg: 'unexpected error', path: '(a value of 2011 characters, not repeated here)' })
    await t.db.close()
  })
})
