import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { openDatabase, sqlObservers, type Database } from '../../src/db/client.js'
import { createLogger, logger, setLogger } from '../../src/core/log.js'
import { freshStorage, testBackend } from '../support/db.js'
import { jwksOf, signSession, testKey, type TestKey } from '../support/jwt.js'
import { INTERNAL_TOKEN } from '../support/keys.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { classify, Tally } from '../support/report.js'

const W = '0x7000000000000000000000000000000000000007'

// A key rotation (create: revoke the previous key, insert the new one, audit both, notify) cut
// off by the database connection dying after each of its statements in turn: afterwards exactly
// one key is active, the previous one unless the commit went through.

describe.runIf(testBackend === 'postgres')('key rotation interrupted by a database fault', () => {
  let proxy: TcpProxy
  let db: Database
  let app: App
  let direct: pg.Client
  let dir: string
  let signer: TestKey

  // Every fault is logged as an error by design; keep the CI log to the [reliability] lines.
  const previousLogger = logger
  beforeAll(async () => {
    setLogger(createLogger('silent'))
    const storage = await freshStorage()
    if (storage.mode !== 'postgres') throw new Error('unreachable')
    direct = new pg.Client({ connectionString: storage.url })
    await direct.connect()
    const target = new URL(storage.url)
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432))
    await proxy.start()
    target.host = `127.0.0.1:${proxy.port}`
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-rotation-'))
    signer = await testKey('ES256', 'k1')
    await writeFile(path.join(dir, 'jwks.json'), JSON.stringify(jwksOf(signer)))
    const config = loadConfig({
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: target.toString(),
      DB_CONNECT_TIMEOUT_MS: '1000',
      AUTH_JWKS_FILE: path.join(dir, 'jwks.json'),
      INTERNAL_TOKEN,
      RATE_LIMIT_KEYS_PER_MINUTE: '0',
    })
    db = await openDatabase(config)
    await db.migrate()
    app = createApp({ config, db })
    await app.ready
    await direct.query('INSERT INTO allowlist (address) VALUES ($1)', [W])
  })
  afterAll(async () => {
    setLogger(previousLogger)
    await app.close()
    await db.close()
    await proxy.cut()
    await direct.end()
    await rm(dir, { recursive: true, force: true })
  })

  const call = (p: string, init?: RequestInit) => app.fetch(new Request(`http://vaultgate.test${p}`, init))
  const create = async () =>
    classify(
      await call('/v1/apiKey', {
        method: 'POST',
        headers: { authorization: `Bearer ${await signSession(signer, { wallets: [W] })}`, 'content-type': 'application/json' },
        body: '{}',
      }),
    )
  const activeKeys = async () =>
    (await direct.query<{ id: string }>('SELECT id FROM api_keys WHERE wallet = $1 AND revoked_at IS NULL AND expires_at > now()', [W])).rows.map((r) => r.id)
  const verify = async (apiKey: string) =>
    (
      await classify(
        await call('/internal/v1/apiKey/verify', {
          method: 'POST',
          headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ apiKey }),
        }),
      )
    ).body.data

  /** Runs a create whose database connections are cut right after its `n`-th statement. */
  async function createCutAfter(n: number) {
    let seen = 0
    let cut: Promise<void> | undefined
    const observer = () => {
      if (++seen === n) cut = proxy.cut()
    }
    sqlObservers.add(observer)
    try {
      return await create()
    } finally {
      sqlObservers.delete(observer)
      await cut
    }
  }

  it('leaves exactly one active key whichever statement the fault hits', async () => {
    const first = await create()
    expect(first.status).toBe(200)
    let current = { id: first.body.data.id as string, apiKey: first.body.data.apiKey as string }

    // How many statements a rotation sends, counted on one that runs undisturbed.
    let statements = 0
    const count = () => void statements++
    sqlObservers.add(count)
    const control = await create()
    sqlObservers.delete(count)
    expect(control.status).toBe(200)
    current = { id: control.body.data.id, apiKey: control.body.data.apiKey }
    expect(statements).toBeGreaterThanOrEqual(5)

    const tally = new Tally('key rotation cut after each statement')
    const activeAfter: number[] = []
    for (let n = 1; n <= statements; n++) {
      const answer = await createCutAfter(n)
      tally.add(answer.status, answer.status === 200 ? undefined : answer.code)
      await proxy.start()
      const active = await activeKeys()
      activeAfter.push(active.length)
      expect(active, `cut after statement ${n}`).toHaveLength(1)
      if (answer.status === 200) {
        // The fault came after the commit: the new key is the one, and it works.
        expect(active).toEqual([answer.body.data.id])
        current = { id: answer.body.data.id, apiKey: answer.body.data.apiKey }
      } else {
        expect(answer).toMatchObject({ status: 503, code: 'unavailable' })
        // The previous key is still the active one, unless the commit reached the server before the
        // connection died (then the new key is active and its raw value was lost with the answer).
        if (active[0] === current.id) expect(await verify(current.apiKey)).toMatchObject({ active: true, keyId: current.id })
        else current = { id: active[0]!, apiKey: '' }
      }
    }
    tally.print({ 'statements per rotation': statements, 'active keys after each fault': activeAfter.join(' ') })
    expect(activeAfter).toEqual(Array(statements).fill(1))
    expect(tally.byStatus.get('503 unavailable')).toBeGreaterThan(0)

    // And the gateway carries on: a rotation after all that succeeds and the new key verifies.
    const after = await create()
    expect(after.status).toBe(200)
    expect(await activeKeys()).toEqual([after.body.data.id])
    expect(await verify(after.body.data.apiKey)).toMatchObject({ active: true, keyId: after.body.data.id })
  })
})
