import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TransactionStatus, TransactionType } from '../../src/generated/prisma/enums.js'
import type { ImportTransaction } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { errorBody, answered } from '../support/bodies.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'

// A wallet across vaults (decisions §14): 60 transactions of wallet A spread over v1, v2 and v3,
// three per timestamp in three different vaults, so every run of equal timestamps spans vaults and
// the id decides; page boundaries fall inside those runs. Other wallets' rows never show up.
const A = '0x52908400098527886e0f7030069857d2e4169ee7'
const A_MIXED = '0x52908400098527886E0F7030069857D2E4169EE7'
const B = '0x8617e340b3d01fa5f11f306f4090fd50e238070d'
const BASE = Date.parse('2026-06-01T00:00:00.000Z')
const VAULTS = ['v1', 'v2', 'v3']
const TYPES: TransactionType[] = ['deposit', 'withdraw', 'redeem', 'deposit']
const STATUSES: TransactionStatus[] = ['completed', 'pending', 'claimable', 'failed', 'cancelled']
const N = 60

const pad = (i: number, width: number) => String(i).padStart(width, '0')
const history: ImportTransaction[] = Array.from({ length: N }, (_, i) => {
  const type = TYPES[i % 4]!
  const status = STATUSES[i % 5]!
  return txDoc(`x${pad(i, 3)}`, {
    vault_id: VAULTS[(i + Math.floor(i / 3)) % 3]!,
    address: A,
    type,
    // claimable is a redeem's state only (the importer refuses it elsewhere).
    status: status === 'claimable' && type !== 'redeem' ? 'pending' : status,
    amount: `${i + 1}.${pad(i, 18)}`,
    timestamp: new Date(BASE + Math.floor(i / 3) * 60_000).toISOString(),
  })
})
const noise = Array.from({ length: 6 }, (_, k) =>
  txDoc(`y${k}`, {
    vault_id: VAULTS[k % 3]!,
    address: B,
    type: 'deposit',
    status: 'completed',
    amount: '3',
    timestamp: new Date(BASE + k * 45_000).toISOString(),
  }),
)

function wire(t: ImportTransaction) {
  return { id: t.id, vault_id: t.vault_id, type: t.type, status: t.status, amount: t.amount.replace(/\.?0+$/, ''), timestamp: t.timestamp, tx_hash: t.tx_hash }
}
/** Newest first, then id descending: a later index is never older, and the larger id comes first. */
const newestFirst = [...history].reverse().map(wire)

const FOREIGN_CURSOR = errorBody('bad_request', 'cursor was issued for a different address, vault or type filter; start again from the first page.')
const BAD_CURSOR = errorBody('bad_request', 'cursor is not a cursor this service issued; pass next_cursor exactly as received.')

describe(`GET /v1/users/{address}/transactions across vaults (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    await importDocument({ vaults: [...VAULTS, 'v4'].map((id) => vaultDoc(id)), transactions: [...history, ...noise] }, t.db.prisma)
  })
  afterAll(() => t.close())

  async function get(path: string) {
    const res = await t.request(path)
    return { status: res.status, body: await res.json(), cacheControl: res.headers.get('cache-control') }
  }
  const list = (query = '', address = A) => get(`/v1/users/${address}/transactions${query}`)

  /** Follows next_cursor to the end; every page but the last is full. */
  async function walk(query: string, limit: number) {
    const pages: { items: ReturnType<typeof wire>[]; next_cursor: string | null }[] = []
    let cursor: string | null = null
    do {
      const res = await list(`?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`)
      expect(res.status).toBe(200)
      pages.push(res.body)
      cursor = res.body.next_cursor
    } while (cursor !== null)
    return pages
  }

  it('pages newest first over every vault: boundaries inside runs of equal timestamps spanning vaults, no gap, no duplicate', async () => {
    const pages = await walk('', 7)
    expect(pages.map((p) => p.items)).toEqual(Array.from({ length: 9 }, (_, k) => newestFirst.slice(k * 7, k * 7 + 7)))
    // Page 1 ends inside the run x053, x052, x051 of one minute (three vaults): page 2 starts with the rest of it.
    expect(pages[0]!.items.at(-1)).toMatchObject({ id: 'x053' })
    expect(pages[1]!.items[0]).toMatchObject({ id: 'x052', timestamp: pages[0]!.items.at(-1)!.timestamp })
    expect(new Set(pages[0]!.items.map((i) => i.vault_id))).toEqual(new Set(VAULTS))
    expect(pages.at(-1)).toEqual({ items: newestFirst.slice(56), next_cursor: null })
    // The default page is 50; B's rows never show.
    expect((await list()).body).toEqual({ items: newestFirst.slice(0, 50), next_cursor: expect.stringMatching(/^[\w-]+\.[\w-]+$/) })
    expect((await list('?limit=200', A_MIXED)).body).toEqual({ items: newestFirst, next_cursor: null })
  })

  it('narrows to one vault with vault_id, and by type, across pages; a per-vault cursor continues the same list', async () => {
    const v2 = newestFirst.filter((i) => i.vault_id === 'v2')
    expect((await walk('&vault_id=v2', 6)).flatMap((p) => p.items)).toEqual(v2)
    const redeems = newestFirst.filter((i) => i.type === 'redeem')
    expect((await walk('&type=redeem', 4)).flatMap((p) => p.items)).toEqual(redeems)
    expect(redeems.map((r) => r.status)).toContain('claimable')
    const v3deposits = newestFirst.filter((i) => i.vault_id === 'v3' && i.type === 'deposit')
    expect((await walk('&type=deposit&vault_id=v3', 3)).flatMap((p) => p.items)).toEqual(v3deposits)
    // The vault-scoped route and vault_id= are the same list, so their cursors are interchangeable.
    const scoped = await get(`/v1/users/${A}/vaults/v2/transactions?limit=5`)
    expect((await list(`?vault_id=v2&limit=50&cursor=${scoped.body.next_cursor}`)).body).toEqual({ items: v2.slice(5), next_cursor: null })
  })

  it('refuses a cursor of another list: another vault narrowing, the whole list, another type or wallet, or a made-up one', async () => {
    const all = (await list('?limit=5')).body.next_cursor as string
    const v1 = (await list('?limit=5&vault_id=v1')).body.next_cursor as string
    expect(await list(`?cursor=${all}&vault_id=v1`)).toEqual({ status: 400, body: FOREIGN_CURSOR, cacheControl: null })
    expect(await list(`?cursor=${v1}`)).toEqual({ status: 400, body: FOREIGN_CURSOR, cacheControl: null })
    expect(await list(`?cursor=${v1}&vault_id=v2`)).toEqual({ status: 400, body: FOREIGN_CURSOR, cacheControl: null })
    expect(await list(`?cursor=${all}&type=deposit`)).toEqual({ status: 400, body: FOREIGN_CURSOR, cacheControl: null })
    expect(await list(`?cursor=${all}`, B)).toEqual({ status: 400, body: FOREIGN_CURSOR, cacheControl: null })
    const [body, mac] = all.split('.') as [string, string]
    for (const bad of [`${body}.${mac.slice(0, -2)}AA`, 'abc', `${body}x.${mac}`]) {
      expect(await list(`?cursor=${encodeURIComponent(bad)}`)).toEqual({ status: 400, body: BAD_CURSOR, cacheControl: null })
    }
  })

  it('answers 400 for bad parameters and 404 for an unknown vault_id; an empty list for a known vault without history', async () => {
    expect(await list('?limit=0')).toEqual({ status: 400, body: errorBody('bad_request', 'limit must be an integer from 1 to 200.'), cacheControl: null })
    expect(await list('?type=swap')).toEqual({
      status: 400,
      body: errorBody('bad_request', 'type must be one of deposit, withdraw, redeem.'),
      cacheControl: null,
    })
    expect(await list('?vault_id=')).toEqual({ status: 400, body: errorBody('bad_request', 'vault_id must not be empty.'), cacheControl: null })
    expect(await get('/v1/users/0x1234/transactions')).toEqual({
      status: 400,
      body: errorBody('bad_request', 'address must be an EVM address: 0x followed by 40 hex digits.'),
      cacheControl: null,
    })
    expect(await list('?vault_id=nope')).toEqual({ status: 404, body: errorBody('not_found', 'Vault "nope" not found.'), cacheControl: null })
    expect(await list('?vault_id=v4')).toEqual({ status: 200, body: { items: [], next_cursor: null }, cacheControl: 'no-store' })
    expect(await list('', '0x0000000000000000000000000000000000000001')).toEqual({
      status: 200,
      body: { items: [], next_cursor: null },
      cacheControl: 'no-store',
    })
  })

  it('costs one keyset statement per page, without a vault condition', async () => {
    const p1 = await recordSql(() => list('?limit=10'))
    const p2 = await recordSql(() => list(`?limit=10&cursor=${p1.result.body.next_cursor}`))
    for (const { result, statements } of [p1, p2]) {
      expect(result.status).toBe(200)
      expect(statements).toHaveLength(1)
    }
    expect(p2.statements[0]).toMatch(
      /FROM transactions\s+WHERE address = \$1 AND \("timestamp", id\) < \(\$2::timestamptz, \$3\)\s+ORDER BY "timestamp" DESC, id DESC\s+LIMIT \$4::int$/,
    )
  })

  it('answers User.transactions without vaultId over GraphQL: the same order and cursors', async () => {
    const q = `query ($a: String!, $after: String, $vaultId: ID) { user(address: $a) { transactions(first: 25, after: $after, vaultId: $vaultId) {
      edges { node { id vaultId type status amount timestamp txHash } } pageInfo { hasNextPage endCursor } } } }`
    const node = (w: ReturnType<typeof wire>) => ({
      id: w.id,
      vaultId: w.vault_id,
      type: w.type,
      status: w.status,
      amount: w.amount,
      timestamp: w.timestamp,
      txHash: w.tx_hash,
    })
    const p1 = await t.graphql(q, { a: A })
    expect(p1.body.data.user.transactions.edges.map((e: { node: unknown }) => e.node)).toEqual(newestFirst.slice(0, 25).map(node))
    const p2 = await t.graphql(q, { a: A, after: p1.body.data.user.transactions.pageInfo.endCursor })
    expect(p2.body.data.user.transactions.edges.map((e: { node: unknown }) => e.node)).toEqual(newestFirst.slice(25, 50).map(node))
    const nulled = await t.graphql(q, { a: A, vaultId: null })
    expect(nulled.body.data.user.transactions.edges.map((e: { node: unknown }) => e.node)).toEqual(newestFirst.slice(0, 25).map(node))
    const unknown = await t.graphql(q, { a: A, vaultId: 'nope' })
    expect(unknown.body).toEqual({
      ...answered({ user: { transactions: null } }),
      errors: [expect.objectContaining({ message: 'Vault "nope" not found.', extensions: expect.objectContaining({ code: 'not_found' }) })],
    })
  })
})
