// Fills a database with synthetic transactions for benchmarks and plan checks, in SQL
// (INSERT … SELECT generate_series): a million rows take seconds, not minutes.
//
//   DATABASE_URL=postgresql://… npx tsx scripts/generate-transactions.ts [--rows 1000000]
//
// Half the rows belong to one wallet in one vault (BENCH_WALLET in BENCH_VAULT, the deep history the
// plan checks page through); the other half are spread over 5,000 wallets and 5 more vaults.
// Every third row shares its timestamp with its neighbours, so pages end inside runs of equal
// timestamps and the id tie-break is exercised. Ids are `bench-<n, 8 digits>`; re-running adds nothing twice.
//
// Meant for a benchmark database: like PostgreSQL's advice for bulk loads, it drops the transactions
// table's secondary indexes and foreign keys, loads, and recreates them from their own catalog
// definitions, all in one transaction (maintaining five indexes and a foreign-key trigger row by
// row is what makes a naive load take minutes). Other sessions wait for the table meanwhile.
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config.js'
import { openDatabase, type Db } from '../src/db/client.js'
import { createProgress } from '../src/core/progress.js'

export const BENCH_WALLET = '0xbe00000000000000000000000000000000000001'
export const BENCH_VAULT = 'bench-v0'
/** The newest generated timestamp; row n is `n / 3` seconds older. */
export const BENCH_NEWEST = new Date('2026-11-01T00:00:00.000Z')

const VAULTS = `INSERT INTO vaults (id, name, chain, symbol, base_asset, base_asset_price_usd, status, tvl, share_price, perf_fee_bps, contract_address, api_endpoint)
  SELECT 'bench-v' || g, 'Bench vault ' || g, 'ethereum', 'vBENCH', 'USDC', 1, 'active', 1000000, 1.05, 1000,
         '0x' || lpad(to_hex(g), 40, '0'), 'https://vaultgate.test/v1/vaults/bench-v' || g
  FROM generate_series(0, 5) g
  ON CONFLICT (id) DO NOTHING`

// Even n: the bench wallet in bench-v0; odd n: one of 5,000 wallets in bench-v1 … bench-v5.
const TRANSACTIONS = `INSERT INTO transactions (id, vault_id, address, type, status, amount, shares, "timestamp", completed_at, tx_hash)
  SELECT 'bench-' || lpad(n::text, 8, '0'),
         CASE WHEN n % 2 = 0 THEN '${BENCH_VAULT}' ELSE 'bench-v' || (1 + n % 5) END,
         CASE WHEN n % 2 = 0 THEN '${BENCH_WALLET}' ELSE '0x' || lpad(to_hex(n % 5000), 40, '0') END,
         (ARRAY['deposit', 'withdraw', 'redeem'])[1 + (n / 2) % 3]::"TransactionType",
         CASE WHEN n % 101 = 0 THEN 'pending' WHEN n % 103 = 0 THEN 'failed' ELSE 'completed' END::"TransactionStatus",
         (1 + n % 1000) + (n % 997) / 1000000.0,
         (1 + n % 1000) * 0.95,
         ts,
         CASE WHEN n % 101 = 0 THEN NULL ELSE ts + (60 + n % 7200) * interval '1 second' END,
         '0x' || lpad(to_hex(n), 64, '0')
  FROM generate_series($1::int, $2::int - 1) n,
       LATERAL (SELECT $3::timestamptz - (n / 3) * interval '1 second' AS ts) t
  ON CONFLICT (id) DO NOTHING`

const CHUNK = 250_000

/** Writes `rows` generated transactions (and their vaults); returns how many rows were new. */
export async function generateTransactions(db: Db, rows: number, onProgress: (done: number) => void = () => {}): Promise<number> {
  return db.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(VAULTS)
      await tx.$executeRawUnsafe(`SET LOCAL maintenance_work_mem = '256MB'`)
      const indexes = await tx.$queryRawUnsafe<{ name: string; def: string }[]>(
        `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS def FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
         WHERE x.indrelid = 'transactions'::regclass AND NOT x.indisprimary`,
      )
      const foreignKeys = await tx.$queryRawUnsafe<{ name: string; def: string }[]>(
        `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'transactions'::regclass AND contype = 'f'`,
      )
      for (const fk of foreignKeys) await tx.$executeRawUnsafe(`ALTER TABLE transactions DROP CONSTRAINT "${fk.name}"`)
      for (const index of indexes) await tx.$executeRawUnsafe(`DROP INDEX "${index.name}"`)
      let inserted = 0
      for (let from = 0; from < rows; from += CHUNK) {
        inserted += await tx.$executeRawUnsafe(TRANSACTIONS, from, Math.min(rows, from + CHUNK), BENCH_NEWEST.toISOString())
        onProgress(Math.min(rows, from + CHUNK))
      }
      for (const index of indexes) await tx.$executeRawUnsafe(index.def)
      for (const fk of foreignKeys) await tx.$executeRawUnsafe(`ALTER TABLE transactions ADD CONSTRAINT "${fk.name}" ${fk.def}`)
      // Fresh statistics, so the planner sees the table as it now is (PGlite has no autovacuum).
      await tx.$executeRawUnsafe('ANALYZE vaults, transactions')
      return inserted
    },
    { maxWait: 60_000, timeout: 3_600_000 },
  )
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { rows: { type: 'string', default: '1000000' } } })
  const rows = Number(values.rows)
  if (!Number.isInteger(rows) || rows < 1) {
    process.stderr.write('usage: DATABASE_URL=postgresql://… npx tsx scripts/generate-transactions.ts [--rows N]\n')
    process.exit(2)
  }
  // No statement timeout: one chunk of the load can take longer than a request may.
  const config = loadConfig({ LOG_LEVEL: 'silent', ...process.env, DB_STATEMENT_TIMEOUT_MS: '0' })
  if (config.storage.mode !== 'postgres') {
    process.stderr.write('Set DATABASE_URL to the PostgreSQL database to fill (the embedded database is not a benchmark target).\n')
    process.exit(2)
  }
  const db = await openDatabase(config)
  try {
    await db.migrate()
    const started = performance.now()
    const progress = createProgress()
    const inserted = await generateTransactions(db.prisma, rows, (done) => progress.update('Generating transactions', done, rows)).finally(() => progress.end())
    process.stdout.write(
      `${inserted} new transactions in ${((performance.now() - started) / 1000).toFixed(1)} s (wallet ${BENCH_WALLET}, vault ${BENCH_VAULT}).\n`,
    )
  } finally {
    await db.close()
  }
}
