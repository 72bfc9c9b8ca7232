import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { openDatabase, type Database } from '../../src/db/client.js'
import { testBackend, testDatabase } from '../support/db.js'
import { fullVault } from '../support/explorer-data.js'
import { ADMIN_TOKEN } from '../support/keys.js'
import { startReceiver, within, type Receiver } from './receiver.js'

// Two gateway instances, each with its own worker, its own connection pool and its own LISTEN
// connection (on PostgreSQL; embedded, two apps over one PGlite in one process): an import through
// one of them reaches one endpoint through both workers, never two requests at once, every event
// exactly once. The endpoint is slow, so overlapping requests would be seen if they were made.

const config = loadConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  ADMIN_TOKEN,
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_POLL_MS: '50',
  RESPONSE_CACHE_TTL_MS: '0',
})
const auth = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }

let db: Database
let other: Database
let a: App
let b: App
let receiver: Receiver
beforeAll(async () => {
  db = await testDatabase()
  const pool = { max: 4, connectTimeoutMs: 5000, idleTimeoutMs: 1000, statementTimeoutMs: 30_000 }
  other = db.pglite
    ? await openDatabase({ storage: { mode: 'embedded', dataDir: 'memory://' }, pool }, { pglite: db.pglite })
    : await openDatabase({ storage: { mode: 'postgres', url: db.pool!.options.connectionString! }, pool })
  a = createApp({ config, db })
  b = createApp({ config, db: other })
  await Promise.all([a.ready, b.ready])
  receiver = await startReceiver(() => ({ status: 200, delayMs: 30 }))
})
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()])
  await receiver?.close()
  if (other?.pglite) {
    // The PGlite is the first client's: close only this client.
    await other.changes.close()
    await other.prisma.$disconnect()
  } else await other?.close()
  await db?.close()
})

const request = (app: App, path: string, init: RequestInit) => app.fetch(new Request(`http://vaultgate.test${path}`, init))

describe(`two gateway instances (${testBackend})`, () => {
  it('deliver to one endpoint one request at a time, every event exactly once', async () => {
    const created = await request(a, '/admin/webhooks', {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ url: receiver.url('/one'), event_types: ['transaction.created'] }),
    })
    expect(created.status).toBe(201)
    receiver.secrets.set('/one', ((await created.json()) as { data: { secret: string } }).data.secret)

    const n = 24
    const transactions = Array.from({ length: n }, (_, i) => ({
      id: `t${i}`,
      vault_id: fullVault.id,
      address: '0x00000000000000000000000000000000000000a1',
      type: 'deposit',
      status: 'completed',
      amount: String(i + 1),
      shares: String(i + 1),
      timestamp: '2026-11-21T10:00:00.000Z',
      completed_at: '2026-11-21T10:00:00.000Z',
      tx_hash: `0x${'e'.repeat(64)}`,
    }))
    const imported = await request(b, '/admin/import', { method: 'POST', headers: auth, body: JSON.stringify({ vaults: [fullVault], transactions }) })
    expect(imported.status).toBe(200)

    // Every delivery recorded as succeeded after one attempt: no request can still be on its way.
    const settled = async () =>
      (await db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'`))[0]!.n === n
    expect(await within(30_000, settled)).toBe(true)
    expect(receiver.requests).toHaveLength(n)
    expect(receiver.maxInFlight.get('/one')).toBe(1)
    expect(receiver.requests.every((r) => r.verified)).toBe(true)
    expect(new Set(receiver.requests.map((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id)).size).toBe(n)
    const [state] = await db.prisma.$queryRawUnsafe<{ succeeded: number; attempts: number }[]>(
      `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded, sum(attempts)::int AS attempts FROM webhook_deliveries`,
    )
    expect(state).toEqual({ succeeded: n, attempts: n })
  })
})
