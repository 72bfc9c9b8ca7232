import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { DATA_CHANGED_CHANNEL } from '../../src/importer/changes.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { freshStorage, testBackend } from '../support/db.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'
import { answered } from '../support/bodies.js'

// Data-As-Of is the time of the data an answer USED (docs/spec/decisions.md §10; issue 25 row 5),
// not the newest time in the whole database: after a snapshot of vault B, every answer about vault
// A still says A's time, equal to its body's `as_of`, on every door of the HTTP front (the hot
// path, the Hono routes, the response cache and its early answers). And a read whose times cannot
// be read is not answered 200 without them.

const WALLET = '0x3333333333333333333333333333333333333333'
const NOBODY = '0x4444444444444444444444444444444444444444'
/** A's newest data: its newest snapshot (its transactions are older). */
const A_TIME = '2026-11-21T11:00:00.000Z'
/** A later snapshot of B, imported after A's data. */
const B_TIME = '2026-11-21T11:40:00.000Z'

const firstImport = {
  vaults: [vaultDoc('used-a'), vaultDoc('used-b')],
  vault_snapshots: [
    { vault_id: 'used-a', as_of: '2026-11-21T10:00:00.000Z', share_price: '0.99', tvl: '900000', base_asset_price_usd: '1' },
    // Equal to the vault record's live values: the import records no snapshot of its own.
    { vault_id: 'used-a', as_of: A_TIME, share_price: '1', tvl: '1000000', base_asset_price_usd: '1' },
    { vault_id: 'used-b', as_of: '2026-11-21T10:00:00.000Z', share_price: '1', tvl: '1000000', base_asset_price_usd: '1' },
  ],
  transactions: [
    txDoc('used-dep', { vault_id: 'used-a', address: WALLET, type: 'deposit', status: 'completed', amount: '100', timestamp: '2026-11-21T10:30:00.000Z' }),
    txDoc('used-red', { vault_id: 'used-a', address: WALLET, type: 'redeem', status: 'pending', amount: '10', timestamp: '2026-11-21T10:45:00.000Z' }),
  ],
}
const snapshotOfB = { vault_snapshots: [{ vault_id: 'used-b', as_of: B_TIME, share_price: '1.01', tvl: '1000000', base_asset_price_usd: '1' }] }

/** Resolves when the next data-change NOTIFY reaches this process (on PostgreSQL, a moment after the commit). */
const nextChange = (t: TestApp) =>
  new Promise<void>((resolve) => {
    const off = t.db.changes.on(DATA_CHANGED_CHANNEL, () => {
      off()
      resolve()
    })
  })

async function importAt(t: TestApp, doc: unknown, at: string) {
  const heard = nextChange(t)
  await importDocument(doc, t.db.prisma, { clock: () => new Date(at) })
  await heard
}

type Fetch = (path: string, init?: RequestInit) => Promise<Response>
const doors = (t: TestApp): [string, Fetch][] => [
  // One pipeline (docs/adr/0005-one-pipeline.md): the in-process adapter.
  ['app.fetch', (path, init) => t.app.fetch(new Request(`http://vaultgate.test${path}`, init))],
]
const postGraphql = (query: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })

async function read(fetch: Fetch, path: string, init?: RequestInit) {
  const res = await fetch(path, init)
  return { status: res.status, header: res.headers.get('data-as-of'), body: await res.json() }
}

for (const cacheTtl of ['0', '60000']) {
  describe(`Data-As-Of of the data read, response cache ${cacheTtl === '0' ? 'off' : 'on'} (${testBackend})`, () => {
    let t: TestApp
    beforeAll(async () => {
      t = await createTestApp({ RESPONSE_CACHE_TTL_MS: cacheTtl }, { clock: () => new Date('2026-11-21T12:30:00.000Z') })
      await importAt(t, firstImport, '2026-11-21T12:00:00.000Z')
      // Read once before B moves: a cached answer about A must not be what keeps A's time.
      await read(doors(t)[0]![1], '/v1/vaults/used-a/performance')
      await importAt(t, snapshotOfB, '2026-11-21T12:05:00.000Z')
    })
    afterAll(() => t.close())

    it("answers about vault A carry A's time after a snapshot of B, equal to the body's as_of, on every door", async () => {
      for (const [door, fetch] of doors(t)) {
        // Twice: a computed answer, then (cache on) the cached one / the early answer.
        for (const round of [1, 2]) {
          const where = `${door}, round ${round}`
          const performance = await read(fetch, '/v1/vaults/used-a/performance')
          expect(performance, where).toMatchObject({ status: 200, header: A_TIME, body: { as_of: A_TIME } })
          for (const path of ['/v1/vaults/used-a', '/v1/vaults/used-a/performance/series', '/v1/vaults/used-a/composition', '/v1/vaults?limit=1'])
            expect(await read(fetch, path), `${where} ${path}`).toMatchObject({ status: 200, header: A_TIME })
          const graphql = await read(fetch, '/graphql', postGraphql('{ vault(id: "used-a") { id performance { asOf } } }'))
          expect(graphql, where).toEqual({ status: 200, header: A_TIME, body: answered({ vault: { id: 'used-a', performance: { asOf: A_TIME } } }) })
          // (The first page of one vault, by id, is A alone.) B's own answers, a list of both and the gateway-wide status carry B's newer time.
          expect(await read(fetch, '/v1/vaults/used-b/performance'), where).toMatchObject({ status: 200, header: B_TIME, body: { as_of: B_TIME } })
          expect(await read(fetch, '/v1/vaults'), where).toMatchObject({ status: 200, header: B_TIME })
          expect(await read(fetch, '/v1/status'), where).toMatchObject({ status: 200, header: B_TIME, body: { data_as_of: B_TIME } })
          const both = await read(fetch, '/graphql', postGraphql('{ a: vault(id: "used-a") { id } b: vault(id: "used-b") { id } }'))
          expect(both, where).toMatchObject({ status: 200, header: B_TIME })
        }
      }
      // GET /graphql (the routes only).
      const get = await t.request(`/graphql?query=${encodeURIComponent('{ vault(id: "used-a") { performance { asOf } } }')}`, {
        headers: { 'x-graphql-csrf': '1' },
      })
      expect({ status: get.status, header: get.headers.get('data-as-of') }).toEqual({ status: 200, header: A_TIME })
    })

    it("answers about a wallet carry its data's time: the vaults it has history in", async () => {
      for (const [door, fetch] of doors(t)) {
        const summary = await read(fetch, `/v1/users/${WALLET}/vaults/used-a/summary`)
        expect(summary, door).toMatchObject({ status: 200, header: A_TIME, body: { as_of: A_TIME } })
        const redeems = await read(fetch, `/v1/users/${WALLET}/redeems`)
        expect(redeems, door).toMatchObject({ status: 200, header: A_TIME, body: { as_of: A_TIME } })
        expect(await read(fetch, `/v1/users/${WALLET}/vaults/used-a/transactions`), door).toMatchObject({ status: 200, header: A_TIME })
        const graphql = await read(fetch, '/graphql', postGraphql(`{ user(address: "${WALLET}") { positions { asOf } pendingRedeems { asOf } } }`))
        expect(graphql, door).toEqual({
          status: 200,
          header: A_TIME,
          body: answered({ user: { positions: [{ asOf: A_TIME }], pendingRedeems: { asOf: A_TIME } } }),
        })
        // A wallet without any history: its (empty) answer is true as of all the data there is.
        const nobody = await read(fetch, `/v1/users/${NOBODY}/redeems`)
        expect(nobody, door).toMatchObject({ status: 200, header: B_TIME, body: { as_of: B_TIME, pending_redeems: [] } })
      }
    })
  })
}

describe(`a read whose data times cannot be read (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => new Date('2026-11-21T12:30:00.000Z') })
    await importAt(t, firstImport, '2026-11-21T12:00:00.000Z')
  })
  afterAll(() => t.close())

  it('fails through the normal error path instead of answering 200 without Data-As-Of (the first read after start)', async () => {
    // Only the times' statement meets the fault: the table it reads is gone behind the gateway's back.
    await t.db.prisma.$executeRawUnsafe('ALTER TABLE data_state RENAME TO data_state_away')
    try {
      for (const [door, fetch] of doors(t)) {
        for (const path of ['/v1/vaults/used-a/performance', `/v1/users/${WALLET}/redeems`]) {
          const res = await read(fetch, path)
          expect(res, `${door} ${path}`).toMatchObject({ status: 500, header: null, body: { status: 'error', error: { code: 'internal' } } })
        }
        const graphql = await read(fetch, '/graphql', postGraphql('{ vault(id: "used-a") { id } }'))
        expect(graphql, door).toMatchObject({ status: 500, header: null, body: { errors: [{ extensions: { code: 'internal' } }] } })
      }
    } finally {
      await t.db.prisma.$executeRawUnsafe('ALTER TABLE data_state_away RENAME TO data_state')
    }
    // Back: the next read reads the times again.
    expect(await read(doors(t)[0]![1], '/v1/vaults/used-a/performance')).toMatchObject({ status: 200, header: A_TIME, body: { as_of: A_TIME } })
  })
})

describe.runIf(testBackend === 'postgres')('a read whose data times time out (postgres)', () => {
  let t: TestApp
  let url: string
  beforeAll(async () => {
    // The app on its own pool with a short statement timeout (the test databases' pool has 30 s).
    const storage = await freshStorage()
    if (storage.mode !== 'postgres') throw new Error('unreachable')
    url = storage.url
    const config = loadConfig({
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: url,
      DB_STATEMENT_TIMEOUT_MS: '300',
      RESPONSE_CACHE_TTL_MS: '0',
      WEBHOOK_WORKER: 'false',
      API_KEY_USAGE_FLUSH_MS: '600000',
    })
    const db = await openDatabase(config)
    await db.migrate()
    const app = createApp({ config, db, clock: () => new Date('2026-11-21T12:30:00.000Z') })
    await app.ready
    t = {
      app,
      db,
      config,
      request: (path, init) => app.fetch(new Request(`http://vaultgate.test${path}`, init)),
      graphql: undefined as never,
      close: async () => {
        await app.close()
        await db.close()
      },
    }
    await importAt(t, firstImport, '2026-11-21T12:00:00.000Z')
  })
  afterAll(() => t.close())

  it('answers 503 unavailable while the times cannot be read, though the data itself can', async () => {
    // Another session holds data_state: the times' statement waits past the statement timeout
    // (57014, the database "unavailable"), while the vaults' own statements go through.
    const holder = new pg.Client({ connectionString: url })
    await holder.connect()
    await holder.query('BEGIN')
    await holder.query('LOCK TABLE data_state IN ACCESS EXCLUSIVE MODE')
    try {
      expect(await t.db.prisma.vaultSnapshot.count({ where: { vaultId: 'used-a' } })).toBe(2)
      for (const [door, fetch] of doors(t)) {
        const res = await read(fetch, '/v1/vaults/used-a/performance')
        expect(res, door).toEqual({
          status: 503,
          header: null,
          body: {
            status: 'error',
            error: { code: 'unavailable', message: 'The database is unavailable; try again shortly.' },
            server_time_ms: expect.any(Number),
          },
        })
        const graphql = await read(fetch, '/graphql', postGraphql(`{ user(address: "${WALLET}") { pendingRedeems { asOf } } }`))
        expect(graphql, door).toMatchObject({ status: 503, header: null, body: { errors: [{ extensions: { code: 'unavailable' } }] } })
      }
    } finally {
      await holder.query('ROLLBACK')
      await holder.end()
    }
    expect(await read(doors(t)[0]![1], `/v1/users/${WALLET}/redeems`)).toMatchObject({ status: 200, header: A_TIME, body: { as_of: A_TIME } })
  })
})
