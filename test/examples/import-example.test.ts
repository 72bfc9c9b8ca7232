import { readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'

// examples/import.json is the document examples/README.md and docs/operations.md "Loading data" tell a
// newcomer to import first: it must load as it stands, covering every section and every enum value.

const ADMIN_TOKEN = 'example-admin-token-0123456789abcdef'
const file = new URL('../../examples/import.json', import.meta.url)

describe('examples/import.json', () => {
  let t: TestApp
  let doc: any
  beforeAll(async () => {
    t = await createTestApp({ ADMIN_TOKEN })
    doc = JSON.parse(await readFile(file, 'utf8'))
  })
  afterAll(() => t.close())

  it('covers every section, vault status in use, and every transaction type and status', () => {
    expect(Object.keys(doc).sort()).toEqual(['compositions', 'transactions', 'vault_snapshots', 'vaults'])
    expect(new Set(doc.transactions.map((x: any) => x.type))).toEqual(new Set(['deposit', 'withdraw', 'redeem']))
    expect(new Set(doc.transactions.map((x: any) => x.status))).toEqual(new Set(['pending', 'claimable', 'completed', 'failed', 'cancelled']))
  })

  it('imports through POST /admin/import with the counts of each section, and reads back', async () => {
    const res = await t.request('/admin/import', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(doc),
    })
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(body.data).toEqual({ vaults: 2, compositions: 2, vault_snapshots: 3, transactions: 7 })

    const read = await t.graphql(
      `{ vault(id: "usdc-prime") { name tvl tvlUsd sharePrice composition { positions { platform pct } } }
         user(address: "0xabcdef0123456789abcdef0123456789abcdef01") { transactions(vaultId: "usdc-prime") { edges { node { id type status } } } } }`,
    )
    expect(read.body.errors).toBeUndefined()
    expect(read.body.data.vault).toEqual({
      name: 'Prime USDC',
      tvl: '2500000',
      tvlUsd: '2499500',
      sharePrice: '1.0421',
      composition: {
        positions: [
          { platform: 'aave', pct: 60 },
          { platform: 'morpho', pct: 40 },
        ],
      },
    })
    expect(read.body.data.user.transactions.edges.map((e: any) => e.node)).toEqual([
      { id: 'tx-3', type: 'redeem', status: 'pending' },
      { id: 'tx-7', type: 'redeem', status: 'claimable' },
      { id: 'tx-2', type: 'withdraw', status: 'completed' },
      { id: 'tx-1', type: 'deposit', status: 'completed' },
    ])
  })
})
