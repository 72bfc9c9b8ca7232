import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { explainHistoryPage, positionAt } from '../../bench/history-plan.js'
import { BENCH_VAULT, BENCH_WALLET, generateTransactions } from '../../scripts/generate-transactions.js'
import type { Database } from '../../src/db/client.js'
import type { HistoryFilter } from '../../src/wallets/history-cursor.js'
import { testDatabase, testBackend } from '../support/db.js'

// The page query on a large table: one index range scan that starts at the cursor and stops after
// limit + 1 rows, with nothing sorted, at the first page and half a million rows deep alike.
// PostgreSQL gets the full million rows; embedded PGlite (WebAssembly, one core) a tenth, which
// still puts the deep page 50,000 rows in.
const ROWS = testBackend === 'postgres' ? 1_000_000 : 100_000
const LIMIT = 200

describe(`transaction history page plan on ${ROWS} transactions (${testBackend})`, () => {
  let db: Database
  beforeAll(async () => {
    db = await testDatabase()
    expect(await generateTransactions(db.prisma, ROWS)).toBe(ROWS)
  })
  afterAll(() => db.close())

  const cases: [string, HistoryFilter, string][] = [
    ['every type', { address: BENCH_WALLET, vaultId: BENCH_VAULT, type: null }, 'transactions_history_idx'],
    ['type redeem', { address: BENCH_WALLET, vaultId: BENCH_VAULT, type: 'redeem' }, 'transactions_history_type_idx'],
    // The wallet across vaults (decisions §14): the same walk on the indexes without the vault.
    ['across vaults, every type', { address: BENCH_WALLET, vaultId: null, type: null }, 'transactions_wallet_history_idx'],
    ['across vaults, type redeem', { address: BENCH_WALLET, vaultId: null, type: 'redeem' }, 'transactions_wallet_history_type_idx'],
  ]

  it.each(cases)('%s: an index scan from the cursor, no sort, limit + 1 rows read at any depth', async (_name, filter, index) => {
    // Half of the wallet's rows (the bench wallet holds ROWS / 2), or half of one type's third of them.
    const depth = Math.floor(filter.type === null ? ROWS / 4 : ROWS / 12)
    for (const after of [null, await positionAt(db.prisma, filter, depth)]) {
      const plan = await explainHistoryPage(db.prisma, filter, after, LIMIT)
      expect(plan.nodeTypes).toEqual(['Limit', 'Index Scan'])
      expect(plan.indexScans).toEqual([
        {
          index,
          cond: after === null ? expect.not.stringContaining('ROW(') : expect.stringContaining('ROW("timestamp", id) < ROW('),
          rows: LIMIT + 1,
          removedByFilter: 0,
        },
      ])
    }
  })
})
