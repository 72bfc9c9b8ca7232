import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DATA_CHANGED_CHANNEL } from '../../src/importer/changes.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { isFreshnessRead, recordSql } from '../support/sql.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'
import { answered } from '../support/bodies.js'

// Freshness (docs/spec/decisions.md §10): /v1/status and GraphQL `meta`, the Data-As-Of header of
// every read (cached ones included), the stale flag, the wallet answers' as_of and the gauge.

const WALLET = '0x1111111111111111111111111111111111111111'
const IMPORTED_AT = '2026-11-21T12:00:00.000Z'
/** The newest time of the first import: its pending redeem (the vault record adds no snapshot: it equals the newest). */
const NEWEST = '2026-11-21T11:45:00.000Z'

const firstImport = {
  vaults: [vaultDoc('fresh-a')],
  vault_snapshots: [
    { vault_id: 'fresh-a', as_of: '2026-11-21T10:00:00.000Z', share_price: '0.99', tvl: '900000', base_asset_price_usd: '1' },
    { vault_id: 'fresh-a', as_of: '2026-11-21T11:00:00.000Z', share_price: '1', tvl: '1000000', base_asset_price_usd: '1' },
  ],
  transactions: [
    txDoc('fresh-dep', { vault_id: 'fresh-a', address: WALLET, type: 'deposit', status: 'completed', amount: '100', timestamp: '2026-11-21T11:30:00.000Z' }),
    txDoc('fresh-red', { vault_id: 'fresh-a', address: WALLET, type: 'redeem', status: 'pending', amount: '10', timestamp: NEWEST }),
  ],
}

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

const statusOf = async (t: TestApp) => {
  const res = await t.request('/v1/status')
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.json() }
}

const META = '{ meta { dataAsOf lastImportAt stale sources { name } } }'

describe(`freshness (${testBackend})`, () => {
  let t: TestApp
  let now = new Date('2026-11-21T12:30:00.000Z')

  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => now })
  })
  afterAll(() => t.close())

  it('answers an empty gateway: no times, stale, no Data-As-Of header, an infinite data age', async () => {
    const { status, headers, body } = await statusOf(t)
    expect(status).toBe(200)
    expect(body).toEqual({ data_as_of: null, last_import_at: null, sources: [], stale: true })
    expect(headers['cache-control']).toBe('no-store')
    expect(headers['data-as-of']).toBeUndefined()
    expect((await t.request('/v1/vaults')).headers.get('data-as-of')).toBeNull()
    expect((await t.graphql(META)).body).toEqual(answered({ meta: { dataAsOf: null, lastImportAt: null, stale: true, sources: [] } }))
    expect(await (await t.request('/metrics')).text()).toMatch(/^vaultgate_data_age_seconds \+Inf$/m)
  })

  it('reports the newest snapshot or transaction time and the last import, in REST and GraphQL alike', async () => {
    await importAt(t, firstImport, IMPORTED_AT)
    const { status, headers, body } = await statusOf(t)
    expect(status).toBe(200)
    expect(body).toEqual({ data_as_of: NEWEST, last_import_at: IMPORTED_AT, sources: [], stale: false })
    expect(headers['data-as-of']).toBe(NEWEST)
    expect(await t.graphql(META)).toEqual({
      status: 200,
      body: answered({ meta: { dataAsOf: NEWEST, lastImportAt: IMPORTED_AT, stale: false, sources: [] } }),
    })
  })

  it('puts Data-As-Of on every REST and GraphQL read, not on mutations', async () => {
    for (const path of [
      '/v1/vaults',
      '/v1/vaults/fresh-a',
      '/v1/vaults/fresh-a/composition',
      '/v1/vaults/fresh-a/composition/series',
      `/v1/users/${WALLET}/redeems`,
      `/v1/users/${WALLET}/vaults/fresh-a/summary`,
      `/v1/users/${WALLET}/vaults/fresh-a/transactions`,
    ]) {
      const res = await t.request(path)
      expect(res.status, path).toBe(200)
      expect(res.headers.get('data-as-of'), path).toBe(NEWEST)
    }
    const post = (query: string) => t.request('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })
    expect((await post('{ vault(id: "fresh-a") { id } }')).headers.get('data-as-of')).toBe(NEWEST)
    expect((await post(`{ user(address: "${WALLET}") { pendingRedeems { totalPending } } }`)).headers.get('data-as-of')).toBe(NEWEST)
    const get = await t.request(`/graphql?query=${encodeURIComponent('{ vaults(first: 1) { edges { node { id } } } }')}`, {
      headers: { 'x-graphql-csrf': '1' },
    })
    expect(get.status).toBe(200)
    expect(get.headers.get('data-as-of')).toBe(NEWEST)
    expect((await post('mutation { revokeApiKey { revoked } }')).headers.get('data-as-of')).toBeNull()
    // An unknown vault is an error, not a read answer.
    expect((await t.request('/v1/vaults/nope')).headers.get('data-as-of')).toBeNull()
  })

  it("gives wallet answers the newest data's time as as_of, not the request time", async () => {
    const redeems = await (await t.request(`/v1/users/${WALLET}/redeems`)).json()
    expect(redeems.as_of).toBe(NEWEST)
    const summary = await (await t.request(`/v1/users/${WALLET}/vaults/fresh-a/summary`)).json()
    expect(summary.as_of).toBe(NEWEST)
    const { body } = await t.graphql(`{ user(address: "${WALLET}") { pendingRedeems { asOf } position(vaultId: "fresh-a") { asOf } positions { asOf } } }`)
    expect(body.data.user).toEqual({ pendingRedeems: { asOf: NEWEST }, position: { asOf: NEWEST }, positions: [{ asOf: NEWEST }] })
  })

  it('turns stale once the newest data is older than STALE_AFTER_MS (1 h), and keeps answering and ready', async () => {
    now = new Date(Date.parse(NEWEST) + 3_600_000)
    expect((await statusOf(t)).body.stale).toBe(false)
    now = new Date(Date.parse(NEWEST) + 3_600_001)
    expect((await statusOf(t)).body).toEqual({ data_as_of: NEWEST, last_import_at: IMPORTED_AT, sources: [], stale: true })
    expect((await t.graphql('{ meta { stale } }')).body).toEqual(answered({ meta: { stale: true } }))
    expect((await t.request('/readyz')).status).toBe(200)
    const res = await t.request('/v1/vaults/fresh-a')
    expect(res.status).toBe(200)
    expect(res.headers.get('data-as-of')).toBe(NEWEST)
    // The gauge an operator alerts on, at scrape time: one hour and a millisecond.
    expect(await (await t.request('/metrics')).text()).toMatch(/^vaultgate_data_age_seconds 3600\.001$/m)
    now = new Date('2026-11-21T12:30:00.000Z')
    expect(await (await t.request('/metrics')).text()).toMatch(/^vaultgate_data_age_seconds 2700$/m)
  })

  it('never counts data dated after its import as newer than the import', async () => {
    const later = '2026-11-21T12:10:00.000Z'
    await importAt(
      t,
      {
        transactions: [
          txDoc('fresh-future', {
            vault_id: 'fresh-a',
            address: WALLET,
            type: 'deposit',
            status: 'completed',
            amount: '1',
            timestamp: '2026-11-21T15:00:00.000Z',
          }),
        ],
      },
      later,
    )
    expect((await statusOf(t)).body).toEqual({ data_as_of: later, last_import_at: later, sources: [], stale: false })
    // Vault by vault too: the vault's answers are as of the import, not of its future row.
    expect((await t.request('/v1/vaults/fresh-a')).headers.get('data-as-of')).toBe(later)
  })

  it('reads its times once per import, not once per request', async () => {
    const at = '2026-11-21T12:20:00.000Z'
    await importAt(t, { vault_snapshots: [{ vault_id: 'fresh-a', as_of: at, share_price: '1.001', tvl: '1000000', base_asset_price_usd: '1' }] }, at)
    const reads = async () => {
      for (const path of ['/v1/vaults/fresh-a', '/v1/vaults', '/v1/status', `/v1/users/${WALLET}/redeems`])
        expect((await t.request(path)).headers.get('data-as-of')).toBe(at)
    }
    const first = await recordSql(reads, { all: true })
    expect(first.statements.filter(isFreshnessRead)).toHaveLength(1)
    const again = await recordSql(reads, { all: true })
    expect(again.statements.filter(isFreshnessRead)).toHaveLength(0)
  })
})

describe(`freshness with STALE_AFTER_MS=0 (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ STALE_AFTER_MS: '0' })
  })
  afterAll(() => t.close())

  it('is never stale, not even without data', async () => {
    expect((await statusOf(t)).body).toEqual({ data_as_of: null, last_import_at: null, sources: [], stale: false })
  })
})

describe(`Data-As-Of of cached answers (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ RESPONSE_CACHE_TTL_MS: '60000' })
    await importAt(t, firstImport, IMPORTED_AT)
  })
  afterAll(() => t.close())

  const QUERY = JSON.stringify({ query: '{ vault(id: "fresh-a") { id tvl } }' })
  const post = () => t.request('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: QUERY })

  it('keeps the header an answer was computed with, on hits and 304s, until an import clears it', async () => {
    const first = await t.request('/v1/vaults/fresh-a')
    expect(first.headers.get('data-as-of')).toBe(NEWEST)
    expect((await post()).headers.get('data-as-of')).toBe(NEWEST)
    // The times move without an import's NOTIFY (written behind the gateway's back): the cached
    // answers were computed with the old data and keep saying so; /v1/status (never cached) moves.
    const moved = '2026-11-21T11:50:00.000Z'
    await t.db.prisma.$executeRawUnsafe(`UPDATE data_state SET data_as_of = '${moved}'`)
    t.app.freshness.invalidate()
    expect((await statusOf(t)).body.data_as_of).toBe(moved)
    const hit = await t.request('/v1/vaults/fresh-a')
    expect(hit.headers.get('data-as-of')).toBe(NEWEST)
    expect(await hit.text()).toBe(await first.clone().text())
    const notModified = await t.request('/v1/vaults/fresh-a', { headers: { 'if-none-match': first.headers.get('etag')! } })
    expect(notModified.status).toBe(304)
    expect(notModified.headers.get('data-as-of')).toBe(NEWEST)
    expect((await post()).headers.get('data-as-of')).toBe(NEWEST)
    // An import clears the cache: the next answers carry the new time.
    const at = '2026-11-21T12:20:00.000Z'
    await importAt(t, { vault_snapshots: [{ vault_id: 'fresh-a', as_of: at, share_price: '1.001', tvl: '1000000', base_asset_price_usd: '1' }] }, at)
    expect((await t.request('/v1/vaults/fresh-a')).headers.get('data-as-of')).toBe(at)
    expect((await post()).headers.get('data-as-of')).toBe(at)
  })
})
