// Checks the transaction-history page query on a big PostgreSQL table: for the first page and for
// pages deep into the bench wallet's history (all types and each type), the plan must be one index
// range scan that starts at the cursor and reads limit + 1 rows, with no sort. Prints the plans'
// numbers and exits 1 when a check fails.
//
//   DATABASE_URL=postgresql://… npm run bench:history [-- --rows 1000000]
//
// Fills the database first (scripts/generate-transactions.ts) when it holds fewer bench rows.
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import type { HistoryFilter } from '../src/wallets/history-cursor.js'
import { BENCH_VAULT, BENCH_WALLET, generateTransactions } from '../scripts/generate-transactions.js'
import { explainHistoryPage, positionAt } from './history-plan.js'

const { values } = parseArgs({ options: { rows: { type: 'string', default: '1000000' }, limit: { type: 'string', default: '200' } } })
const rows = Number(values.rows)
const limit = Number(values.limit)
const config = loadConfig({ LOG_LEVEL: 'silent', ...process.env, DB_STATEMENT_TIMEOUT_MS: '0' })
if (config.storage.mode !== 'postgres') {
  process.stderr.write('Set DATABASE_URL to a PostgreSQL database for the benchmark.\n')
  process.exit(2)
}
const db = await openDatabase(config)
let failed = false
try {
  await db.migrate()
  const [{ n }] = await db.prisma.$queryRaw<[{ n: number }]>`SELECT count(*)::int AS n FROM transactions WHERE id LIKE 'bench-%'`
  if (n < rows) {
    process.stdout.write(`Generating ${rows} transactions…\n`)
    await generateTransactions(db.prisma, rows)
  }
  const total = Math.max(n, rows)
  const out = (s: string) => process.stdout.write(`${s}\n`)
  out(`${total} bench transactions; ${total / 2} in the bench wallet's history; page size ${limit}\n`)
  out('filter    depth    plan                 index                          rows  buffers   ms')
  // The per-vault list, then the same wallet across vaults (decisions §14; its own indexes).
  for (const [vaultId, type] of [BENCH_VAULT, null].flatMap((v) => ([null, 'deposit', 'withdraw', 'redeem'] as const).map((t) => [v, t] as const))) {
    const filter: HistoryFilter = { address: BENCH_WALLET, vaultId, type }
    const expected = `transactions_${vaultId === null ? 'wallet_' : ''}history${type === null ? '' : '_type'}_idx`
    const size = type === null ? total / 2 : total / 6
    for (const depth of [0, Math.floor(size / 2), Math.floor(size) - limit - 1]) {
      const after = depth === 0 ? null : await positionAt(db.prisma, filter, depth)
      const plan = await explainHistoryPage(db.prisma, filter, after, limit)
      const scan = plan.indexScans[0]
      const ok =
        plan.nodeTypes.join(',') === 'Limit,Index Scan' &&
        plan.indexScans.length === 1 &&
        scan!.index === expected &&
        scan!.rows <= limit + 1 &&
        scan!.removedByFilter === 0 &&
        (after === null || scan!.cond.includes('ROW("timestamp", id) < ROW('))
      failed ||= !ok
      out(
        `${`${vaultId === null ? '*' : ''}${type ?? 'all'}`.padEnd(9)} ${String(depth).padStart(6)}   ${plan.nodeTypes.join(' > ').padEnd(20)} ${(scan?.index ?? '-').padEnd(30)} ${String(scan?.rows ?? '-').padStart(4)} ${String(plan.buffers).padStart(8)} ${plan.executionMs.toFixed(2).padStart(6)}${ok ? '' : '   FAILED'}`,
      )
    }
  }
  out(failed ? '\nFAILED: a page is not a bounded index range scan.' : '\nOK: every page is one index range scan from the cursor, no sort.')
} finally {
  await db.close()
}
process.exit(failed ? 1 : 0)
