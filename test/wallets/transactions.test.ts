import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TransactionStatus, TransactionType } from '../../src/generated/prisma/enums.js'
import type { ImportTransaction } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { recordSql } from '../support/sql.js'
import { txDoc, vaultDoc } from '../support/wallet-data.js'
import { errorBody, answered } from '../support/bodies.js'

// A hand-built history with known answers: 450 transactions of wallet A in vault v1, three per
// timestamp (so page boundaries fall inside runs of equal timestamps and the id decides), types
// and statuses cycling; plus other wallets' and other vaults' rows that must never show up.
const A = '0x52908400098527886e0f7030069857d2e4169ee7'
const A_MIXED = '0x52908400098527886E0F7030069857D2E4169EE7'
const B = '0x8617e340b3d01fa5f11f306f4090fd50e238070d'
const BASE = Date.parse('2026-06-01T00:00:00.000Z')
const TYPES: TransactionType[] = ['deposit', 'withdraw', 'redeem']
const STATUSES: TransactionStatus[] = ['completed', 'pending', 'failed', 'cancelled']
const N = 450

const pad = (i: number, width: number) => String(i).padStart(width, '0')

function historyTx(i: number): ImportTransaction {
  return txDoc(`t${pad(i, 4)}`, {
    vault_id: 'v1',
    address: A,
    type: TYPES[i % 3]!,
    status: STATUSES[i % 4]!,
    // 18 decimals on the way in; the wire drops trailing zeros ("11.00000000000000001", "1").
    amount: `${i + 1}.${pad(i, 18)}`,
    timestamp: new Date(BASE + Math.floor(i / 3) * 60_000).toISOString(),
  })
}

/** The spec's wire shape, written out independently of the code under test. */
function wire(t: ImportTransaction) {
  return { id: t.id, vault_id: t.vault_id, type: t.type, status: t.status, amount: t.amount.replace(/\.?0+$/, ''), timestamp: t.timestamp, tx_hash: t.tx_hash }
}

const history = Array.from({ length: N }, (_, i) => historyTx(i))
/** Newest first: a later index is never older, and within a timestamp the larger id comes first. */
const newestFirst = [...history].reverse().map(wire)

const noise: ImportTransaction[] = [
  ...Array.from({ length: 5 }, (_, k) =>
    txDoc(`u${k}`, { vault_id: 'v2', address: A, type: 'deposit', status: 'completed', amount: '7', timestamp: new Date(BASE + k * 90_000).toISOString() }),
  ),
  ...Array.from({ length: 5 }, (_, k) =>
    txDoc(`w${k}`, { vault_id: 'v1', address: B, type: 'redeem', status: 'pending', amount: '3', timestamp: new Date(BASE + k * 45_000).toISOString() }),
  ),
]

const LIMIT_ERROR = errorBody('bad_request', 'limit must be an integer from 1 to 200.')
const TYPE_ERROR = errorBody('bad_request', 'type must be one of deposit, withdraw, redeem.')
const FOREIGN_CURSOR = errorBody('bad_request', 'cursor was issued for a different address, vault or type filter; start again from the first page.')
const BAD_CURSOR = errorBody('bad_request', 'cursor is not a cursor this service issued; pass next_cursor exactly as received.')
const BAD_ADDRESS = errorBody('bad_request', 'address must be an EVM address: 0x followed by 40 hex digits.')

describe(`GET /v1/users/{address}/vaults/{vault_id}/transactions (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    await importDocument({ vaults: [vaultDoc('v1'), vaultDoc('v2'), vaultDoc('v3')], transactions: [...history, ...noise] }, t.db.prisma)
  })
  afterAll(() => t.close())

  async function get(path: string) {
    const res = await t.request(path)
    return { status: res.status, body: await res.json(), cacheControl: res.headers.get('cache-control') }
  }
  const page = (query = '', address = A, vault = 'v1') => get(`/v1/users/${address}/vaults/${vault}/transactions${query}`)

  it('pages through 450 transactions at limit 200: three pages, no duplicates, no gaps, stable under a newer insert', async () => {
    const first = await page('?limit=200')
    expect(first).toEqual({
      status: 200,
      body: { items: newestFirst.slice(0, 200), next_cursor: expect.stringMatching(/^[\w-]+\.[\w-]+$/) },
      cacheControl: 'no-store',
    })

    // A newer transaction arrives between two page fetches: it belongs before page 1, so the
    // pages already started go on exactly where they left off.
    const newer = txDoc('tnew', {
      vault_id: 'v1',
      address: A,
      type: 'deposit',
      status: 'pending',
      amount: '5',
      timestamp: new Date(BASE + 86_400_000).toISOString(),
    })
    await importDocument({ transactions: [newer] }, t.db.prisma)
    try {
      const second = await page(`?limit=200&cursor=${first.body.next_cursor}`)
      expect(second).toEqual({ status: 200, body: { items: newestFirst.slice(200, 400), next_cursor: expect.any(String) }, cacheControl: 'no-store' })
      const third = await page(`?limit=200&cursor=${second.body.next_cursor}`)
      expect(third).toEqual({ status: 200, body: { items: newestFirst.slice(400), next_cursor: null }, cacheControl: 'no-store' })

      const ids = [...first.body.items, ...second.body.items, ...third.body.items].map((i: { id: string }) => i.id)
      expect(ids).toEqual(newestFirst.map((i) => i.id))
      expect(new Set(ids).size).toBe(N)

      // A fresh first page starts with the newcomer.
      expect((await page('?limit=1')).body).toEqual({ items: [wire(newer)], next_cursor: expect.any(String) })
    } finally {
      await t.db.prisma.transaction.delete({ where: { id: 'tnew' } })
    }
  })

  it('defaults to 50 per page, newest first', async () => {
    expect((await page()).body).toEqual({ items: newestFirst.slice(0, 50), next_cursor: expect.any(String) })
  })

  it.each(TYPES)('filters by type=%s (150 of the 450), across pages', async (type) => {
    const ofType = newestFirst.filter((i) => i.type === type)
    expect(ofType).toHaveLength(150)
    expect((await page(`?type=${type}&limit=200`)).body).toEqual({ items: ofType, next_cursor: null })
    const p1 = await page(`?type=${type}&limit=100`)
    expect(p1.body).toEqual({ items: ofType.slice(0, 100), next_cursor: expect.any(String) })
    expect((await page(`?type=${type}&limit=100&cursor=${p1.body.next_cursor}`)).body).toEqual({ items: ofType.slice(100), next_cursor: null })
  })

  it('ends on a page that is exactly full with next_cursor null', async () => {
    const p1 = await page('?limit=150&type=deposit')
    expect(p1.body.next_cursor).toBeNull()
    const all = await page('?limit=200')
    const p2 = await page(`?limit=200&cursor=${all.body.next_cursor}`)
    const last = await page(`?limit=50&cursor=${p2.body.next_cursor}`)
    expect(last.body).toEqual({ items: newestFirst.slice(400), next_cursor: null })
  })

  it.each([['0'], ['201'], ['abc'], [''], ['1.5'], ['-1'], ['1e2']])('rejects limit=%s with 400', async (limit) => {
    expect(await page(`?limit=${limit}`)).toEqual({ status: 400, body: LIMIT_ERROR, cacheControl: null })
  })

  it.each([['swap'], ['Deposit'], ['']])('rejects type=%s with 400', async (type) => {
    expect(await page(`?type=${type}`)).toEqual({ status: 400, body: TYPE_ERROR, cacheControl: null })
  })

  it('rejects a cursor issued for another address, vault or type filter, even untampered', async () => {
    const cursor = (await page('?limit=10')).body.next_cursor as string
    expect(await page(`?cursor=${cursor}`, B)).toMatchObject({ status: 400, body: FOREIGN_CURSOR })
    expect(await page(`?cursor=${cursor}`, A, 'v2')).toMatchObject({ status: 400, body: FOREIGN_CURSOR })
    expect(await page(`?cursor=${cursor}&type=deposit`)).toMatchObject({ status: 400, body: FOREIGN_CURSOR })
    const typed = (await page('?limit=10&type=redeem')).body.next_cursor as string
    expect(await page(`?cursor=${typed}`)).toMatchObject({ status: 400, body: FOREIGN_CURSOR })
    expect(await page(`?cursor=${typed}&type=withdraw`)).toMatchObject({ status: 400, body: FOREIGN_CURSOR })
    // The same list asked with the address in another case is the same list.
    expect((await page(`?limit=10&cursor=${cursor}`, A_MIXED)).body).toEqual({ items: newestFirst.slice(10, 20), next_cursor: expect.any(String) })
  })

  it('rejects a tampered or made-up cursor', async () => {
    const cursor = (await page('?limit=10')).body.next_cursor as string
    const [body, mac] = cursor.split('.') as [string, string]
    // Point the cursor at another row (the position is in the body) but keep the old MAC.
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString()) as [number, number, string, string]
    const moved = Buffer.from(JSON.stringify([payload[0], payload[1], 't0001', payload[3]])).toString('base64url')
    const flip = (s: string, at: number) => s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1)
    for (const bad of [
      `${moved}.${mac}`,
      `${body}.${flip(mac, 3)}`,
      `${flip(body, 5)}.${mac}`,
      body,
      `${body}.${mac}.x`,
      'abc',
      'eyJ4IjoxfQ.AAAAAAAAAAAAAAAAAAAAAA',
      '',
      '%00',
    ]) {
      expect(await page(`?cursor=${encodeURIComponent(bad)}`)).toEqual({ status: 400, body: BAD_CURSOR, cacheControl: null })
    }
  })

  it.each([['0x123'], ['not-an-address'], [`0x${'g'.repeat(40)}`], [`0x${'a'.repeat(41)}`], [`${'a'.repeat(42)}`], [` ${A}`]])(
    'rejects the address %j with 400 on every wallet route',
    async (address) => {
      const enc = encodeURIComponent(address)
      for (const path of [`/v1/users/${enc}/vaults/v1/transactions`, `/v1/users/${enc}/redeems`, `/v1/users/${enc}/vaults/v1/summary`]) {
        expect(await get(path)).toEqual({ status: 400, body: BAD_ADDRESS, cacheControl: null })
      }
    },
  )

  it('answers 404 for an unknown vault and an empty page for a known vault without history', async () => {
    expect(await page('', A, 'nope')).toEqual({ status: 404, body: errorBody('not_found', 'Vault "nope" not found.'), cacheControl: null })
    expect(await page('', A, 'v3')).toEqual({ status: 200, body: { items: [], next_cursor: null }, cacheControl: 'no-store' })
    expect(await page('?type=redeem', A, 'v2')).toEqual({ status: 200, body: { items: [], next_cursor: null }, cacheControl: 'no-store' })
  })

  it('costs one keyset statement per page, at any depth', async () => {
    const p1 = await recordSql(() => page('?limit=200'))
    const p2 = await recordSql(() => page(`?limit=200&cursor=${p1.result.body.next_cursor}`))
    const typed = (await page('?limit=100&type=deposit')).body.next_cursor
    const p3 = await recordSql(() => page(`?limit=200&type=deposit&cursor=${typed}`))
    for (const { result, statements } of [p1, p2, p3]) {
      expect(result.status).toBe(200)
      expect(statements).toHaveLength(1)
    }
    expect(p3.statements[0]).toMatch(/AND type = \$3::"TransactionType" AND \("timestamp", id\) < \(\$4::timestamptz, \$5\)/)
    expect(p2.statements[0]).toMatch(
      /FROM transactions\s+WHERE address = \$1 AND vault_id = \$2 AND \("timestamp", id\) < \(\$3::timestamptz, \$4\)\s+ORDER BY "timestamp" DESC, id DESC\s+LIMIT \$5::int$/,
    )
    expect(p2.statements[0]).not.toMatch(/OFFSET/i)
  })
})

describe(`user(address).transactions over GraphQL (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    await importDocument({ vaults: [vaultDoc('v1'), vaultDoc('v2')], transactions: [...history, ...noise] }, t.db.prisma)
  })
  afterAll(() => t.close())

  const QUERY = `query ($address: String!, $vaultId: ID!, $type: TransactionType, $first: Int, $after: String) {
    user(address: $address) {
      address
      transactions(vaultId: $vaultId, type: $type, first: $first, after: $after) {
        edges { cursor node { id vaultId type status amount timestamp txHash } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }`
  const node = (w: ReturnType<typeof wire>) => ({
    id: w.id,
    vaultId: w.vault_id,
    type: w.type,
    status: w.status,
    amount: w.amount,
    timestamp: w.timestamp,
    txHash: w.tx_hash,
  })

  it('is a Relay connection: edges with cursors, pageInfo, forward pagination with first/after', async () => {
    const withdrawals = newestFirst.filter((i) => i.type === 'withdraw')
    const p1 = await t.graphql(QUERY, { address: A_MIXED, vaultId: 'v1', type: 'withdraw', first: 2 })
    const cursor = expect.stringMatching(/^[\w-]+\.[\w-]+$/)
    expect(p1).toEqual({
      status: 200,
      body: answered({
        user: {
          address: A,
          transactions: {
            edges: withdrawals.slice(0, 2).map((w) => ({ cursor, node: node(w) })),
            pageInfo: { hasNextPage: true, hasPreviousPage: false, startCursor: cursor, endCursor: cursor },
          },
        },
      }),
    })
    const { edges, pageInfo } = p1.body.data.user.transactions
    expect(pageInfo.startCursor).toBe(edges[0].cursor)
    expect(pageInfo.endCursor).toBe(edges[1].cursor)
    // Any edge's cursor continues after that edge.
    const fromFirstEdge = await t.graphql(QUERY, { address: A, vaultId: 'v1', type: 'withdraw', first: 3, after: edges[0].cursor })
    expect(fromFirstEdge.body.data.user.transactions.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(withdrawals.slice(1, 4).map((w) => w.id))
    const rest = await t.graphql(QUERY, { address: A, vaultId: 'v1', type: 'withdraw', first: 200, after: pageInfo.endCursor })
    expect(rest.body.data.user.transactions.edges.map((e: { node: unknown }) => e.node)).toEqual(withdrawals.slice(2).map(node))
    expect(rest.body.data.user.transactions.pageInfo).toEqual({ hasNextPage: false, hasPreviousPage: true, startCursor: cursor, endCursor: cursor })
  })

  it('answers an empty connection for a known vault without history', async () => {
    expect((await t.graphql(QUERY, { address: B, vaultId: 'v2' })).body).toEqual(
      answered({
        user: { address: B, transactions: { edges: [], pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null } } },
      }),
    )
  })

  // `user` and `transactions` are nullable: an error nulls the field it belongs to, and the rest of
  // the answer stays (200, GraphQL over HTTP).
  const historyFailed = { user: { address: A, transactions: null } }
  it.each([
    ['first: 0', { first: 0 }, 'bad_request', 'first must be an integer from 1 to 200.', historyFailed],
    ['first: 201', { first: 201 }, 'bad_request', 'first must be an integer from 1 to 200.', historyFailed],
    [
      'a made-up cursor',
      { after: 'abc' },
      'bad_request',
      'after is not a cursor this service issued; pass pageInfo.endCursor exactly as received.',
      historyFailed,
    ],
    ['a malformed address', { address: '0x1234' }, 'bad_request', 'address must be an EVM address: 0x followed by 40 hex digits.', { user: null }],
    ['an unknown vault', { vaultId: 'nope' }, 'not_found', 'Vault "nope" not found.', historyFailed],
  ])('answers %s with an error coded %s, nulling only its field', async (_name, vars, code, message, data) => {
    const res = await t.graphql(QUERY, { address: A, vaultId: 'v1', ...vars })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ ...answered(data), errors: [expect.objectContaining({ message, extensions: expect.objectContaining({ code }) })] })
  })

  it('rejects an unknown type as a bad_request', async () => {
    const res = await t.graphql(QUERY, { address: A, vaultId: 'v1', type: 'swap' })
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'bad_request' }) })])
  })
})
