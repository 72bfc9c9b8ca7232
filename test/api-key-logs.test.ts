import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { digestOf } from '../src/keys/format.js'
import { createLogger, logger, setLogger } from '../src/core/log.js'
import { testBackend } from './support/db.js'
import { createKeysTestApp, manualClock, type KeysTestApp } from './support/keys.js'

// Secrets never reach logs (decisions.md §7): not the raw key, not its digest, not a session token.

const W = '0x5555555555555555555555555555555555555555'

describe(`logs around key management (${testBackend})`, () => {
  const lines: string[] = []
  const previous = logger
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    setLogger(
      createLogger(
        'trace',
        new Writable({
          write: (chunk, _enc, done) => {
            lines.push(String(chunk))
            done()
          },
        }),
      ),
    )
    t = await createKeysTestApp({ clock: time.clock, allowlist: [W] })
  })
  afterAll(async () => {
    setLogger(previous)
    await t.app.close() // the test closed the database itself
  })

  it('hold no raw key, digest or session token, whatever happens', async () => {
    const secrets: string[] = []
    const session = await t.session([W])
    secrets.push(session.authorization!.slice('Bearer '.length))

    const created = await t.create(W)
    const key = created.body.data.apiKey as string
    secrets.push(key, key.slice(key.lastIndexOf('_') + 1), digestOf(key))
    expect((await t.verify(key)).body.data.active).toBe(true)
    await t.get(W)

    // Refused tokens, at every log level.
    const forged = `${secrets[0]!.slice(0, -4)}AAAA`
    secrets.push(forged)
    expect((await t.request('/v1/apiKey', { headers: { authorization: `Bearer ${forged}` } })).status).toBe(401)

    // A create that fails inside its transaction, after the key was generated.
    await t.db.prisma.$executeRawUnsafe(`CREATE FUNCTION refuse_keys() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no keys today'; END $$`)
    await t.db.prisma.$executeRawUnsafe(`CREATE TRIGGER refuse_keys BEFORE INSERT ON api_keys FOR EACH ROW EXECUTE FUNCTION refuse_keys()`)
    const failed = await t.create(W)
    expect(failed.status).toBe(500)
    expect(failed.body.error).toEqual({ code: 'internal', message: 'Internal server error.' })
    await t.db.prisma.$executeRawUnsafe(`DROP TRIGGER refuse_keys ON api_keys`)

    // Revocation, then verification with the database gone (fail closed, logged as an error).
    await t.revoke(W)
    expect((await t.verify(key)).body.data.reason).toBe('revoked')
    await t.db.close()
    time.advance(30_000)
    expect((await t.verify(key)).status).toBe(503)

    const log = lines.join('')
    expect(log).toContain('resolver failed')
    expect(log).toContain('API key verification unavailable')
    for (const s of secrets) expect(log).not.toContain(s)
  })
})
