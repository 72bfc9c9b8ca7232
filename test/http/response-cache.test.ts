import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ImportVault } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { cacheClearedSince, eventually } from '../support/eventually.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { vaultDoc } from '../support/wallet-data.js'
import { answered } from '../support/bodies.js'

// The response cache must never show data older than the last import, and must never hold an
// answer that depends on who asks. Its TTL is a minute here, so only invalidation can explain a
// fresh read.

const ADMIN_TOKEN = 'admin-token-for-cache-tests-0123456789abcdef'

const vault = (id: string, tvl: string): ImportVault => vaultDoc(id, { name: `Cache ${id}`, symbol: 'vcUSDC', tvl, share_price: '1.5' })

const VAULT_QUERY = 'query CacheVault($id: ID!) { vault(id: $id) { id tvl composition { asOf positions { platform pct } } } }'

describe(`response cache (${testBackend})`, () => {
  let t: TestApp

  /** Waits until the cache has been emptied `times` more times (each import's NOTIFY arrives on its own schedule). */
  const clearedSince = (generation: number, times = 1) => cacheClearedSince(t.app.responseCache, generation, times)

  beforeAll(async () => {
    t = await createTestApp({ RESPONSE_CACHE_TTL_MS: '60000', ADMIN_TOKEN })
    // createTestApp waits for app.ready: the change feed listens before anything is imported.
    expect(t.app.responseCache.enabled).toBe(true)
    const generation = t.app.responseCache.ticket()
    await importDocument(
      {
        vaults: [vault('cache-a', '100'), vault('cache-b', '200')],
        compositions: [
          {
            vault_id: 'cache-a',
            as_of: '2026-01-01T00:00:00.000Z',
            positions: [{ platform: 'aave', asset: 'USD Coin', symbol: 'USDC', pct: 100, apy_est_pct: 4, icon: 'https://i.test/a.svg' }],
          },
        ],
      },
      t.db.prisma,
    )
    // The import's own NOTIFY empties the cache when it arrives (on PostgreSQL, a moment later).
    await clearedSince(generation)
  })
  afterAll(() => t.close())

  const getVault = async (id: string, headers: Record<string, string> = {}) => {
    const { result: res, statements } = await recordSql(() => t.request(`/v1/vaults/${id}`, { headers }))
    return { status: res.status, etag: res.headers.get('etag'), body: res.status === 200 ? await res.json() : null, statements }
  }
  const graphql = async (query: string, variables: Record<string, unknown>) => {
    const { result, statements } = await recordSql(() => t.graphql(query, variables))
    return { ...result, statements }
  }
  const adminImport = (doc: unknown) =>
    t.request('/admin/import', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(doc),
    })

  it('answers a repeated public REST read from memory: same body and ETag, no SQL, 304 on If-None-Match', async () => {
    const first = await getVault('cache-a')
    expect(first.status).toBe(200)
    expect(first.body.tvl).toBe('100')
    const second = await getVault('cache-a')
    expect(second).toEqual({ ...first, statements: [] })
    const conditional = await recordSql(() => t.request('/v1/vaults/cache-a', { headers: { 'if-none-match': first.etag! } }))
    expect(conditional.result.status).toBe(304)
    expect(conditional.result.headers.get('etag')).toBe(first.etag)
    expect(conditional.result.headers.get('cache-control')).toBe('public, max-age=10')
    expect(conditional.statements).toEqual([])
  })

  it('shows an import through the admin API on the very next read (REST and GraphQL)', async () => {
    expect((await getVault('cache-b')).body.tvl).toBe('200')
    const before = await graphql(VAULT_QUERY, { id: 'cache-b' })
    expect(before.body).toEqual(answered({ vault: { id: 'cache-b', tvl: '200', composition: { asOf: null, positions: [] } } }))
    expect((await graphql(VAULT_QUERY, { id: 'cache-b' })).statements).toEqual([])

    const generation = t.app.responseCache.ticket()
    const res = await adminImport({
      vaults: [vault('cache-b', '250.5')],
      compositions: [
        {
          vault_id: 'cache-b',
          as_of: '2026-02-01T00:00:00.000Z',
          positions: [{ platform: 'morpho', asset: 'USD Coin', symbol: 'USDC', pct: 100, apy_est_pct: 5, icon: 'https://i.test/m.svg' }],
        },
      ],
    })
    expect(res.status).toBe(200)
    // Emptied twice: by the admin route before it answered, and by the import's NOTIFY.
    await clearedSince(generation, 2)

    const rest = await getVault('cache-b')
    expect(rest.body.tvl).toBe('250.5')
    expect(rest.statements.length).toBe(1)
    expect((await graphql(VAULT_QUERY, { id: 'cache-b' })).body).toEqual(
      answered({ vault: { id: 'cache-b', tvl: '250.5', composition: { asOf: '2026-02-01T00:00:00.000Z', positions: [{ platform: 'morpho', pct: 100 }] } } }),
    )
  })

  it('shows an import run by the importer directly (the CLI, or another instance) once its NOTIFY arrives', async () => {
    expect((await getVault('cache-a')).body.tvl).toBe('100')
    expect((await getVault('cache-a')).statements).toEqual([])
    const generation = t.app.responseCache.ticket()
    await importDocument({ vaults: [vault('cache-a', '101')] }, t.db.prisma)
    await clearedSince(generation)
    const after = await eventually(async () => {
      const r = await getVault('cache-a')
      expect(r.body.tvl).not.toBe('100')
      return r
    })
    expect(after.body.tvl).toBe('101')
  })

  it('drops answers when another writer on the same database commits a change and notifies', async () => {
    await graphql(VAULT_QUERY, { id: 'cache-a' })
    expect((await graphql(VAULT_QUERY, { id: 'cache-a' })).statements).toEqual([])
    const sql = `BEGIN; UPDATE vaults SET tvl = 102 WHERE id = 'cache-a'; NOTIFY vaultgate_data_changed; COMMIT;`
    if (t.db.pool) {
      const other = new pg.Client({ connectionString: t.db.pool.options.connectionString })
      await other.connect()
      await other.query(sql)
      await other.end()
    } else {
      await t.db.pglite!.exec(sql)
    }
    const after = await eventually(async () => {
      const r = await graphql(VAULT_QUERY, { id: 'cache-a' })
      expect(r.body.data.vault.tvl).not.toBe('101')
      return r
    })
    expect(after.body.data.vault.tvl).toBe('102')
  })

  it('never stores an answer with errors, a 404, or an operation touching non-public fields', async () => {
    const withError = '{ vault(id: "cache-a") { id } vaults(first: 0) { edges { cursor } } }'
    const entries = t.app.responseCache.size
    expect((await graphql(withError, {})).body.errors[0].extensions.code).toBe('bad_request')
    expect((await graphql(withError, {})).body.errors[0].extensions.code).toBe('bad_request')
    expect(t.app.responseCache.size).toBe(entries)

    expect((await getVault('nope')).status).toBe(404)
    const again = await getVault('nope')
    expect(again.status).toBe(404)
    expect(again.statements.length).toBe(1)

    const introspecting = '{ vault(id: "cache-a") { id } __schema { queryType { name } } }'
    expect((await graphql(introspecting, {})).body.data.vault).toEqual({ id: 'cache-a' })
    expect((await graphql(introspecting, {})).statements.length).toBe(1)
  })
})

// Stale-while-revalidate end to end: a TTL of 200 ms and a stale window of a minute, so an expired
// answer is always served stale here, and only its background refresh can bring a newer one. The
// database is changed behind the gateway's back (no NOTIFY) to tell the two apart.
describe(`response cache, stale-while-revalidate (${testBackend})`, () => {
  let t: TestApp

  beforeAll(async () => {
    t = await createTestApp({ RESPONSE_CACHE_TTL_MS: '200', RESPONSE_CACHE_STALE_MS: '60000', ADMIN_TOKEN })
    expect(t.app.responseCache.staleMs).toBe(60_000)
    const generation = t.app.responseCache.ticket()
    await importDocument({ vaults: [vault('swr-a', '100')] }, t.db.prisma)
    // The import's NOTIFY empties the cache when it arrives (on PostgreSQL, a moment later): a
    // clear landing inside a test below would turn its stale answer into a fresh one.
    await cacheClearedSince(t.app.responseCache, generation)
  })
  afterAll(() => t.close())

  // Waits that let an entry's TTL pass: the expiry is the behaviour under test.
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  /** The read once `changed` holds (a refresh runs after the stale answer, on its own schedule). */
  const until = <T>(read: () => Promise<T>, changed: (value: T) => boolean) =>
    eventually(async () => {
      const value = await read()
      expect(changed(value), JSON.stringify(value)).toBe(true)
      return value
    })
  /** Changes a vault's TVL without telling the gateway (no NOTIFY): the cache cannot know. */
  const quietUpdate = (tvl: number) =>
    t.db.pglite ? t.db.pglite.exec(`UPDATE vaults SET tvl = ${tvl} WHERE id = 'swr-a'`) : t.db.pool!.query(`UPDATE vaults SET tvl = ${tvl} WHERE id = 'swr-a'`)
  const getVault = async () => {
    const res = await t.request('/v1/vaults/swr-a')
    return { status: res.status, etag: res.headers.get('etag'), tvl: ((await res.json()) as { tvl: string }).tvl }
  }
  const graphqlTvl = async () => ((await t.graphql(VAULT_QUERY, { id: 'swr-a' })).body as { data: { vault: { tvl: string } } }).data.vault.tvl

  it('answers an expired REST read at once with the stale body and its ETag, then the refreshed one (new ETag)', async () => {
    const first = await getVault()
    expect(first).toMatchObject({ status: 200, tvl: '100' })
    await quietUpdate(103)
    await sleep(250)
    expect(await getVault()).toEqual(first)
    // The refresh started by the stale answer ran after that request ended, under a deadline of its own.
    const refreshed = await until(getVault, (r) => r.tvl !== '100')
    expect(refreshed.tvl).toBe('103')
    expect(refreshed.etag).not.toBe(first.etag)
  })

  it('answers an expired GraphQL read at once with the stale body, then the refreshed one', async () => {
    expect(await graphqlTvl()).toBe('103')
    await quietUpdate(104)
    await sleep(250)
    expect(await graphqlTvl()).toBe('103')
    expect(await until(graphqlTvl, (tvl) => tvl !== '103')).toBe('104')
  })

  it('never answers a stale entry after an import', async () => {
    // The REST entry (refreshed to 103 above) catches up with the quiet update to 104, then goes stale.
    expect((await until(getVault, (r) => r.tvl !== '103')).tvl).toBe('104')
    await sleep(250)
    const res = await t.request('/admin/import', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ vaults: [vault('swr-a', '105')] }),
    })
    expect(res.status).toBe(200)
    expect((await getVault()).tvl).toBe('105')
  })
})
