import { createHash } from 'node:crypto'
import pg from 'pg'

// The benchmark's large dataset, generated inside PostgreSQL with INSERT … SELECT generate_series
// (no rows cross the wire, so 4.5 million rows take about a minute). Every value is a function of
// the row number, so two runs with the same anchor hold the same data. The anchor is the current
// hour: the gateway reads with the real clock, and the windows ("1y", "7d") must be full.

export const VAULTS = 50
export const HOURS = 2 * 365 * 24 // two years of hourly composition snapshots
export const WALLETS = 100_000
export const TRANSACTIONS = 1_000_000
/** Wallet 1 (the transaction-page scenarios): 60,000 transactions in vault 1, so a page 1,000 deep exists. */
export const WHALE_IN_VAULT_1 = 60_000
/** Wallet 2 (the dashboard scenario): 20 transactions in each of vaults 1…20, the first a completed deposit. */
export const DASHBOARD_VAULTS = 20
export const DASHBOARD_TX_PER_VAULT = 20
/** Bumped whenever the generator changes, so a kept database (BENCH_KEEP_DB) is rebuilt. */
export const DATASET_VERSION = 3

export interface DatasetInfo {
  version: number
  anchor: string
  vaultIds: string[]
  /** The wallet with 60,000 transactions in vaultIds[0]. */
  whale: string
  /** The wallet with a position in each of the first 20 vaults. */
  dashboardWallet: string
  counts: { vaults: number; snapshots: number; vaultSnapshots: number; allocations: number; wallets: number; transactions: number }
  generatedInMs: number
}

export const vaultId = (n: number) => `bench-vault-${String(n).padStart(2, '0')}`
/** Wallet n's API key (every wallet has one active key and is on the allowlist). */
export function rawKeyOf(n: number): string {
  const md5 = (s: string) => createHash('md5').update(s).digest('hex')
  return `bench_${(md5(`k1${n}`) + md5(`k2${n}`)).slice(0, 44).replaceAll('0', 'z')}`
}
const rawKeySql = (n: string) => `'bench_' || translate(substr(md5('k1' || ${n}) || md5('k2' || ${n}), 1, 44), '0', 'z')`

/** Wallet n's address: 0x + 40 hex digits derived from md5, lowercase. */
export const walletSql = (n: string) => `'0x' || substr(md5('w' || ${n}), 1, 32) || substr(md5('x' || ${n}), 1, 8)`

const CHAINS = ['ethereum', 'arbitrum', 'base', 'optimism', 'polygon']
const CHAIN_IDS = ['1', '42161', '8453', '10', '137']
const ASSETS = [
  ['USDC', 'USD Coin'],
  ['USDT', 'Tether USD'],
  ['DAI', 'Dai Stablecoin'],
  ['WETH', 'Wrapped Ether'],
  ['WBTC', 'Wrapped Bitcoin'],
]

function statements(anchor: string): { label: string; sql: string }[] {
  const a = `'${anchor}'::timestamptz`
  const chain = (expr: string) => `(ARRAY[${CHAINS.map((c) => `'${c}'`).join(',')}])[1 + (${expr}) % ${CHAINS.length}]`
  const chainId = (expr: string) => `(ARRAY[${CHAIN_IDS.map((c) => `'${c}'`).join(',')}])[1 + (${expr}) % ${CHAIN_IDS.length}]`
  const sym = (expr: string) => `(ARRAY[${ASSETS.map(([s]) => `'${s}'`).join(',')}])[1 + (${expr}) % ${ASSETS.length}]`
  return [
    {
      label: 'vaults',
      sql: `INSERT INTO vaults (id, name, chain, chain_id, symbol, base_asset, base_asset_price_usd, status, tvl, share_price,
          perf_fee_bps, mgmt_fee_bps, contract_address, max_deposit, min_deposit, deposit_paused, instant_liquidity,
          instant_slippage_max_bps, redeem_24h_threshold_pct_of_aum, redeem_48h_above_threshold, icon_dark, icon_light,
          api_endpoint, description, docs_url, inception_date, strategy_brief, created_at, updated_at)
        SELECT 'bench-vault-' || lpad(v::text, 2, '0'),
          'Bench ' || ${sym('v')} || ' Vault ' || v,
          ${chain('v')}, ${chainId('v')},
          'bv' || ${sym('v')} || v, ${sym('v')},
          CASE ${sym('v')} WHEN 'WETH' THEN 3150.25 WHEN 'WBTC' THEN 96210.5 ELSE 1 END,
          (CASE WHEN v % 10 = 0 THEN 'paused' WHEN v % 17 = 0 THEN 'closed' ELSE 'active' END)::"VaultStatus",
          (v * 1234567.891011)::numeric + (v * 0.000000000000000001)::numeric,
          1 + (v * 0.0123456789012345678)::numeric,
          500 + (v % 10) * 100, CASE WHEN v % 4 = 0 THEN NULL ELSE 50 + (v % 5) * 25 END,
          '0x' || substr(md5('vault' || v), 1, 32) || substr(md5('contract' || v), 1, 8),
          CASE WHEN v % 3 = 0 THEN NULL ELSE 1000000 * v END, CASE WHEN v % 3 = 0 THEN NULL ELSE 10 END,
          v % 10 = 0, v % 2 = 0, 30 + v % 20, 10 + (v % 5) * 2.5, v % 2 = 1,
          'https://icons.example/' || v || '/dark.svg', 'https://icons.example/' || v || '/light.svg',
          'https://api.example/vaults/' || v,
          'A benchmark vault allocating ' || ${sym('v')} || ' across lending markets and fixed-yield positions.',
          'https://docs.example/vaults/' || v,
          (${a} - interval '2 years')::date + v,
          'Allocates to the highest risk-adjusted yield; rebalanced hourly.',
          ${a} - interval '2 years', ${a}
        FROM generate_series(1, ${VAULTS}) AS v`,
    },
    {
      // Two years of hourly vault snapshots (decisions §9) ending at the vault's live values (h = 0):
      // the share price drifts 2-8 % a year (every 13th vault loses 10 % a year), the TVL waves,
      // and every vault whose number ends in 3 has a +80 % spike at h = 5000 (flagged, SPIKE_PCT).
      label: 'vault snapshots',
      sql: `INSERT INTO vault_snapshots (vault_id, as_of, share_price, tvl, base_asset_price_usd)
        SELECT vv.id, ${a} - h * interval '1 hour',
          round(vv.share_price / exp((0.02 + (n % 7) * 0.01 - CASE WHEN n % 13 = 0 THEN 0.12 ELSE 0 END) * h / 8760.0), 18)
            * CASE WHEN n % 10 = 3 AND h = 5000 THEN 1.8 ELSE 1 END,
          CASE WHEN h = 0 THEN vv.tvl ELSE round(vv.tvl * (1 + 0.1 * sin(h / 500.0))::numeric, 18) END,
          vv.base_asset_price_usd
        FROM (SELECT v.*, substr(v.id, 13)::int AS n FROM vaults v) vv, generate_series(0, ${HOURS - 1}) AS h`,
    },
    {
      label: 'composition snapshots',
      sql: `INSERT INTO composition_snapshots (id, vault_id, as_of)
        SELECT (v - 1) * ${HOURS} + h + 1, 'bench-vault-' || lpad(v::text, 2, '0'), ${a} - h * interval '1 hour'
        FROM generate_series(1, ${VAULTS}) AS v, generate_series(0, ${HOURS - 1}) AS h`,
    },
    {
      // Four allocations per snapshot whose weights drift over time and always sum to 100; two
      // share an asset, so grouping by asset merges them.
      label: 'allocations',
      sql: `INSERT INTO allocations (snapshot_id, platform, asset, symbol, pct, apy_est_pct, icon)
        SELECT s.id, p.platform, p.asset, p.symbol, p.pct, p.apy, 'https://icons.example/' || p.platform || '.svg'
        FROM (SELECT id, (id - 1) / ${HOURS} + 1 AS v, (id - 1) % ${HOURS} AS h FROM composition_snapshots) s
        CROSS JOIN LATERAL (
          SELECT round((35 + 8 * sin(s.h / 500.0 + s.v))::numeric, 4)::float8 AS p1,
                 round((25 + 6 * cos(s.h / 300.0 + s.v))::numeric, 4)::float8 AS p2,
                 round((15 + 4 * sin(s.h / 200.0 + 2 * s.v))::numeric, 4)::float8 AS p3
        ) w
        CROSS JOIN LATERAL (VALUES
          ('aave-v3', ${sym('s.v')} || ' Lending', ${sym('s.v')}, w.p1, round((3 + s.v % 7 * 0.5 + sin(s.h / 100.0))::numeric, 4)::float8),
          ('morpho-blue', ${sym('s.v')} || ' Lending', ${sym('s.v')}, w.p2, round((4 + s.v % 5 * 0.3 + cos(s.h / 90.0))::numeric, 4)::float8),
          ('spark', 'Savings Dai', 'sDAI', w.p3, round((5 + sin(s.h / 70.0))::numeric, 4)::float8),
          ('pendle', 'Pendle PT ' || ${sym('s.v')}, 'PT-' || ${sym('s.v')}, round((100 - w.p1 - w.p2 - w.p3)::numeric, 4)::float8, round((8 + s.v % 3)::numeric, 4)::float8)
        ) AS p(platform, asset, symbol, pct, apy)`,
    },
    {
      label: 'transactions',
      sql: `INSERT INTO transactions (id, vault_id, address, type, status, amount, shares, timestamp, completed_at, tx_hash)
        SELECT 'tx-' || lpad(i::text, 7, '0'), 'bench-vault-' || lpad(t.v::text, 2, '0'), ${walletSql('t.w')},
          t.type::"TransactionType", t.status::"TransactionStatus",
          t.amount, round(t.amount / (1 + t.v * 0.0123456789012345678), 18),
          t.ts, CASE WHEN t.status = 'completed' THEN t.ts + ((3600 + i % 86400) * interval '1 second') END,
          '0x' || md5('tx' || i) || md5('hash' || i)
        FROM generate_series(1::bigint, ${TRANSACTIONS}) AS i
        CROSS JOIN LATERAL (
          SELECT CASE WHEN i <= ${WHALE_IN_VAULT_1} THEN 1 WHEN i <= ${WHALE_IN_VAULT_1 + DASHBOARD_VAULTS * DASHBOARD_TX_PER_VAULT} THEN 2 ELSE 2 + (i * 7919) % ${WALLETS - 1} END AS w,
            i > ${WHALE_IN_VAULT_1} AND i <= ${WHALE_IN_VAULT_1 + DASHBOARD_VAULTS * DASHBOARD_TX_PER_VAULT} AND (i - ${WHALE_IN_VAULT_1} - 1) % ${DASHBOARD_TX_PER_VAULT} = 0 AS opens_position
        ) ww
        CROSS JOIN LATERAL (
          SELECT ww.w,
            CASE WHEN i <= ${WHALE_IN_VAULT_1} THEN 1
                 WHEN i <= ${WHALE_IN_VAULT_1 + DASHBOARD_VAULTS * DASHBOARD_TX_PER_VAULT} THEN 1 + (i - ${WHALE_IN_VAULT_1} - 1) / ${DASHBOARD_TX_PER_VAULT}
                 ELSE 1 + (ww.w * 13 + i % 3) % ${VAULTS} END AS v,
            CASE WHEN ww.opens_position THEN 'deposit' WHEN i % 10 < 6 THEN 'deposit' WHEN i % 10 < 8 THEN 'withdraw' ELSE 'redeem' END AS type,
            CASE WHEN ww.opens_position THEN 'completed'
                 WHEN i % 40 = 9 THEN 'pending' WHEN i % 97 = 0 THEN 'failed' WHEN i % 89 = 0 THEN 'cancelled' ELSE 'completed' END AS status,
            (10 + (i * 7907) % 1000000 / 100.0)::numeric AS amount,
            ${a} - CASE WHEN ww.w = 1 THEN i * interval '1000 seconds' ELSE ((i * 104729) % (730 * 86400)) * interval '1 second' END AS ts
        ) t`,
    },
    {
      label: 'allowlist',
      sql: `INSERT INTO allowlist (address, note, created_at) SELECT ${walletSql('w')}, 'bench', ${a} - interval '1 day' FROM generate_series(1, ${WALLETS}) AS w`,
    },
    {
      label: 'api keys',
      sql: `INSERT INTO api_keys (id, wallet, key_prefix, digest, created_at, expires_at)
        SELECT md5('key' || w)::uuid, ${walletSql('w')}, 'bench', encode(sha256(convert_to(${rawKeySql('w')}, 'UTF8')), 'hex'), ${a}, ${a} + interval '30 days'
        FROM generate_series(1, ${WALLETS}) AS w`,
    },
    { label: 'sequences', sql: `SELECT setval(pg_get_serial_sequence('composition_snapshots', 'id'), (SELECT max(id) FROM composition_snapshots))` },
    { label: 'analyze', sql: 'ANALYZE' },
  ]
}

/** The URL of database `name` on the server of `adminUrl`. */
export function databaseUrl(adminUrl: string, name: string): string {
  const u = new URL(adminUrl)
  u.pathname = `/${name}`
  return u.toString()
}

async function withClient<T>(url: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
}

/** The dataset recorded in a kept database, when it matches this generator's version. */
export async function keptDataset(adminUrl: string, name: string): Promise<DatasetInfo | undefined> {
  const exists = await withClient(adminUrl, (c) => c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]))
  if (exists.rowCount === 0) return undefined
  return withClient(databaseUrl(adminUrl, name), async (c) => {
    const r = await c.query(`SELECT to_regclass('public.bench_dataset') IS NOT NULL AS ok`)
    if (!r.rows[0].ok) return undefined
    const info = (await c.query('SELECT info FROM bench_dataset')).rows[0]?.info as DatasetInfo | undefined
    return info?.version === DATASET_VERSION ? info : undefined
  })
}

export async function createDatabase(adminUrl: string, name: string): Promise<void> {
  await dropDatabase(adminUrl, name)
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`))
}

/**
 * Fills a migrated, empty database. `log` hears each step with its duration. The info is also
 * stored in a `bench_dataset` table, so a kept database can be recognised and reused.
 */
export async function generateDataset(url: string, log: (line: string) => void, anchor = hourNow()): Promise<DatasetInfo> {
  const started = performance.now()
  const run = (steps: { label: string; sql: string }[]) =>
    withClient(url, async (c) => {
      await c.query('SET synchronous_commit = off')
      // The rows satisfy their foreign keys by construction: skip the per-row FK triggers.
      await c.query('SET session_replication_role = replica')
      for (const step of steps) {
        const t = performance.now()
        const r = await c.query(step.sql)
        log(`  ${step.label}: ${r.rowCount ?? 0} rows in ${((performance.now() - t) / 1000).toFixed(1)} s`)
      }
    })
  const all = statements(anchor)
  const step = (label: string) => all.find((s) => s.label === label)!
  // The two big tables get their indexes once they are full (a bulk build is much faster than
  // row-by-row maintenance), from the definitions the migrations created. No foreign key points
  // at them, so their primary keys can go too.
  const indexes = await withClient(url, async (c) => {
    const r = await c.query(`SELECT i.tablename, i.indexname, i.indexdef, pg_get_constraintdef(con.oid) AS condef
      FROM pg_indexes i LEFT JOIN pg_constraint con ON con.conname = i.indexname AND con.conrelid = ('public.' || i.tablename)::regclass
      WHERE i.schemaname = 'public' AND i.tablename IN ('allocations', 'transactions')`)
    const rows = r.rows as { tablename: string; indexname: string; indexdef: string; condef: string | null }[]
    for (const row of rows) await c.query(row.condef ? `ALTER TABLE ${row.tablename} DROP CONSTRAINT "${row.indexname}"` : `DROP INDEX "${row.indexname}"`)
    return rows.map((row) => ({
      label: `index ${row.indexname}`,
      sql: row.condef ? `ALTER TABLE ${row.tablename} ADD CONSTRAINT "${row.indexname}" ${row.condef}` : row.indexdef,
    }))
  })
  await run([step('vaults'), step('vault snapshots'), step('composition snapshots'), step('allowlist'), step('api keys')])
  // The two big tables fill in parallel (two cores), and so are their indexes built.
  await Promise.all([run([step('allocations')]), run([step('transactions')])])
  await Promise.all([run(indexes.filter((_, i) => i % 2 === 0)), run(indexes.filter((_, i) => i % 2 === 1))])
  await run([step('sequences'), step('analyze')])
  const info: DatasetInfo = {
    version: DATASET_VERSION,
    anchor,
    vaultIds: Array.from({ length: VAULTS }, (_, i) => vaultId(i + 1)),
    whale: await withClient(url, async (c) => (await c.query(`SELECT ${walletSql('1')} AS a`)).rows[0].a as string),
    dashboardWallet: await withClient(url, async (c) => (await c.query(`SELECT ${walletSql('2')} AS a`)).rows[0].a as string),
    counts: {
      vaults: VAULTS,
      snapshots: VAULTS * HOURS,
      vaultSnapshots: VAULTS * HOURS,
      allocations: VAULTS * HOURS * 4,
      wallets: WALLETS,
      transactions: TRANSACTIONS,
    },
    generatedInMs: Math.round(performance.now() - started),
  }
  await withClient(url, async (c) => {
    await c.query('CREATE TABLE bench_dataset (info jsonb NOT NULL)')
    await c.query('INSERT INTO bench_dataset VALUES ($1)', [JSON.stringify(info)])
  })
  return info
}

export function hourNow(): string {
  const d = new Date()
  d.setUTCMinutes(0, 0, 0)
  return d.toISOString()
}
