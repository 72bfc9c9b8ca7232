import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { openDatabase, type Database } from '../../src/db/client.js'
import { freshStorage, testBackend } from '../support/db.js'
import { TcpProxy } from '../support/tcp-proxy.js'

describe.runIf(testBackend === 'postgres')('readiness when PostgreSQL goes away and comes back', () => {
  let proxy: TcpProxy
  let db: Database
  let app: App

  beforeAll(async () => {
    const storage = await freshStorage()
    if (storage.mode !== 'postgres') throw new Error('unreachable')
    const target = new URL(storage.url)
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432))
    await proxy.start()
    target.host = `127.0.0.1:${proxy.port}`
    const config = loadConfig({ DATABASE_URL: target.toString(), DB_CONNECT_TIMEOUT_MS: '1000', LOG_LEVEL: 'silent' })
    db = await openDatabase(config)
    app = createApp({ config, db })
  })
  afterAll(async () => {
    await app.close()
    await db.close()
    await proxy.cut()
  })

  const readyz = () => app.fetch(new Request('http://t/readyz'))

  it('answers 200, then 503 unavailable within the connect timeout, then 200 again without a restart', async () => {
    expect((await readyz()).status).toBe(200)

    await proxy.cut()
    const started = Date.now()
    const down = await readyz()
    expect(Date.now() - started).toBeLessThan(5000)
    expect(down.status).toBe(503)
    expect(await down.json()).toEqual({
      status: 'error',
      error: { code: 'unavailable', message: 'The database is unavailable; try again shortly.' },
      server_time_ms: expect.any(Number),
    })

    await proxy.start()
    expect((await readyz()).status).toBe(200)
  })
})
