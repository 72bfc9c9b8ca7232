import { systemClock, type Clock } from '../core/clock.js'
import { prisma, type Db } from '../db/client.js'
import type { Prisma } from '../generated/prisma/client.js'
import { beginChangeCapture, CHANGES_TABLE, emitCapturedChanges } from '../webhooks/emit.js'
import { announceDataChange } from './changes.js'
import { importShapes, reject, validateImportDocument, type ImportDocument, type ImportVault } from './document.js'

// Writing a validated import document (docs/spec/decisions.md §7) in one transaction with set-based SQL:
// each chunk of rows travels as ONE jsonb parameter and is unpacked by jsonb_populate_recordset
// into the table's own row type, so there is no per-row round trip and no bind-parameter limit,
// column types come from the table itself (no second list of them here), and amounts reach
// NUMERIC columns as JSON strings (never as JS numbers).

type Tx = Prisma.TransactionClient

/** Rows written (inserted or updated) per kind. */
export interface ImportCounts {
  vaults: number
  compositions: number
  /** Rows of the document's `vault_snapshots` section (not the snapshots vault records add). */
  vault_snapshots: number
  transactions: number
}

/** Where a long import is: rows of each kind written so far (for a progress display). */
export interface ImportProgress {
  kind: 'vaults' | 'compositions' | 'vault_snapshots' | 'transactions'
  done: number
  total: number
}

/** Rows per statement: large enough to amortise the round trip, small enough to bound memory. */
const TRANSACTION_CHUNK = 5000
const VAULT_SNAPSHOT_CHUNK = 5000
const COMPOSITION_CHUNK = 2000

function chunks<T>(rows: T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size))
  return out
}

/** `INSERT … SELECT FROM jsonb_populate_recordset(NULL::table, $1) ON CONFLICT (key) DO UPDATE` over the named columns. */
function upsertSql(table: string, columns: string[], key: string[], extraUpdates = ''): string {
  if (columns.every((n) => key.includes(n))) throw new Error(`upsertSql: ${table} has no column to update`)
  const names = columns.map((n) => `"${n}"`).join(', ')
  const updates = columns
    .filter((n) => !key.includes(n))
    .map((n) => `"${n}" = EXCLUDED."${n}"`)
    .concat(extraUpdates ? [extraUpdates] : [])
    .join(', ')
  return `INSERT INTO "${table}" (${names}) SELECT ${names} FROM jsonb_populate_recordset(NULL::"${table}", $1::jsonb)
    ON CONFLICT (${key.map((k) => `"${k}"`).join(', ')}) DO UPDATE SET ${updates}`
}

/**
 * A vault record's columns: its fields flattened (the nested groups of the wire shape hold plain
 * columns), each named after its field, except these. A new vault field needs no change here.
 */
const VAULT_COLUMN_OF: Readonly<Record<string, string>> = {
  'contract.address': 'contract_address',
  'deposit_constraints.paused': 'deposit_paused',
  'icons.dark': 'icon_dark',
  'icons.light': 'icon_light',
}

const isGroup = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The vault table's row for an import record (see VAULT_COLUMN_OF). */
export function vaultRow(v: ImportVault): Record<string, unknown> {
  const row: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(v)) {
    if (!isGroup(value)) row[field] = value
    else for (const [inner, x] of Object.entries(value)) row[VAULT_COLUMN_OF[`${field}.${inner}`] ?? inner] = x
  }
  return row
}

/** The columns of vaultRow, from the import schema's shape (nested groups flattened the same way). */
const vaultColumns = Object.entries(importShapes.vaults).flatMap(([field, schema]) => {
  const inner = (schema as { shape?: Record<string, unknown> }).shape
  return inner ? Object.keys(inner).map((k) => VAULT_COLUMN_OF[`${field}.${k}`] ?? k) : [field]
})

// Prisma's @updatedAt is client-side only; raw SQL has to maintain it.
const VAULT_UPSERT = upsertSql('vaults', vaultColumns, ['id'], '"updated_at" = CURRENT_TIMESTAMP')
const transactionColumns = Object.keys(importShapes.transactions)
const TRANSACTION_UPSERT = upsertSql('transactions', transactionColumns, ['id'])

// The same upserts when a webhook endpoint wants the import's events (src/webhooks/emit.ts): one
// statement still, which also records in the capture table what it changed, comparing with the
// rows as they were before it (every part of a statement sees the same snapshot, so `prev` reads
// the old rows). Returns the rows written, as the plain upsert's count does.
function capturingUpsertSql(table: string, columns: string[], changed: string, capture: string, extraUpdates = ''): string {
  const names = columns.map((n) => `"${n}"`).join(', ')
  const upsert = upsertSql(table, columns, ['id'], extraUpdates).replace(
    `SELECT ${names} FROM jsonb_populate_recordset(NULL::"${table}", $1::jsonb)`,
    `SELECT ${names} FROM input`,
  )
  return `WITH input AS (SELECT ${names} FROM jsonb_populate_recordset(NULL::"${table}", $1::jsonb)),
    prev AS (SELECT ${columns.map((n) => `t."${n}"`).join(', ')} FROM "${table}" t WHERE t.id IN (SELECT id FROM input)),
    up AS (${upsert} RETURNING ${names}),
    captured AS (
      INSERT INTO ${CHANGES_TABLE} (kind, id, previous_status)
      SELECT ${capture} FROM up LEFT JOIN prev ON prev.id = up.id
      WHERE prev.id IS NULL OR (${changed})
      ON CONFLICT (kind, id) DO NOTHING
    )
    SELECT count(*)::int AS n FROM up`
}

const rowOf = (alias: string, columns: string[]) => `ROW(${columns.map((n) => `${alias}."${n}"`).join(', ')})`
// A vault's record counts as changed when any imported column differs (not updated_at).
const VAULT_UPSERT_CAPTURING = capturingUpsertSql(
  'vaults',
  vaultColumns,
  `${rowOf('prev', vaultColumns)} IS DISTINCT FROM ${rowOf('up', vaultColumns)}`,
  `'vault_values', up.id, NULL`,
  '"updated_at" = CURRENT_TIMESTAMP',
)
// A transaction is captured when it is new or its status changed (with the status it had).
const TRANSACTION_UPSERT_CAPTURING = capturingUpsertSql(
  'transactions',
  transactionColumns,
  'prev.status IS DISTINCT FROM up.status',
  `'transaction', up.id, prev.status::text`,
)
// A vault's composition counts as changed by a snapshot that is new, or whose allocations differ
// from the ones it is about to have replaced (compared as sorted rows of the table's own types).
// Runs before SNAPSHOT_INSERT.
const allocationRows = (from: string) =>
  `(SELECT coalesce(array_agg(ROW(a.platform, a.asset, a.symbol, a.pct, a.apy_est_pct, a.icon)::text ORDER BY a.platform, a.asset), '{}') FROM ${from})`
const COMPOSITION_CAPTURE = `INSERT INTO ${CHANGES_TABLE} (kind, id)
  SELECT DISTINCT 'vault_composition', r.vault_id
  FROM jsonb_to_recordset($1::jsonb) AS r(vault_id text, as_of timestamptz, positions jsonb)
  LEFT JOIN composition_snapshots s ON s.vault_id = r.vault_id AND s.as_of = r.as_of
  WHERE s.id IS NULL
     OR ${allocationRows('allocations a WHERE a.snapshot_id = s.id')}
        IS DISTINCT FROM ${allocationRows('jsonb_populate_recordset(NULL::allocations, r.positions) a')}
  ON CONFLICT (kind, id) DO NOTHING`

// Snapshot rows carry nothing but their key, so an existing one is kept (its id stays stable)
// and only its allocations are replaced.
const SNAPSHOT_INSERT = `INSERT INTO composition_snapshots (vault_id, as_of)
  SELECT vault_id, as_of FROM jsonb_to_recordset($1::jsonb) AS r(vault_id text, as_of timestamptz)
  ON CONFLICT (vault_id, as_of) DO NOTHING`
const ALLOCATION_DELETE = `DELETE FROM allocations a USING composition_snapshots s, jsonb_to_recordset($1::jsonb) AS r(vault_id text, as_of timestamptz)
  WHERE s.vault_id = r.vault_id AND s.as_of = r.as_of AND a.snapshot_id = s.id`
const ALLOCATION_INSERT = `INSERT INTO allocations (snapshot_id, platform, asset, symbol, pct, apy_est_pct, icon)
  SELECT s.id, p.platform, p.asset, p.symbol, p.pct, p.apy_est_pct, p.icon
  FROM jsonb_to_recordset($1::jsonb) AS r(vault_id text, as_of timestamptz, positions jsonb)
  JOIN composition_snapshots s ON s.vault_id = r.vault_id AND s.as_of = r.as_of
  CROSS JOIN LATERAL jsonb_populate_recordset(NULL::allocations, r.positions) AS p`

// ---------------------------------------------------------------------------------------------
// Vault snapshots and live values (decisions §9). Live values and history never disagree: a
// vault's tvl, share_price and base_asset_price_usd are always those of its newest snapshot.
//  1. The document's snapshots are upserted on (vault_id, as_of).
//  2. A vault record whose live values differ from its vault's newest snapshot (after step 1) is
//     recorded as a snapshot at the import's time. Values equal to the newest snapshot's add
//     nothing, so the same document imported twice writes no second snapshot, and a writer that
//     sends snapshots with the record they end on (the chain source) adds no wall-clock point.
//  3. Every vault the document touched takes the values of its newest snapshot, whichever
//     section that came from: snapshots newer than the record win, as do snapshots newer than the
//     vault's previous live values.

const vaultSnapshotColumns = Object.keys(importShapes.vault_snapshots)
const VAULT_SNAPSHOT_UPSERT = upsertSql('vault_snapshots', vaultSnapshotColumns, ['vault_id', 'as_of'])

/** The newest snapshot of the vault `idExpr`, as a lateral subquery (one backward probe of the key). */
const newestSnapshot = (idExpr: string) =>
  `(SELECT s.share_price, s.tvl, s.base_asset_price_usd FROM vault_snapshots s WHERE s.vault_id = ${idExpr} ORDER BY s.as_of DESC LIMIT 1)`

const RECORD_SNAPSHOTS = `INSERT INTO vault_snapshots (vault_id, as_of, share_price, tvl, base_asset_price_usd)
  SELECT r.id, $2::timestamptz, r.share_price, r.tvl, r.base_asset_price_usd
  FROM jsonb_populate_recordset(NULL::vaults, $1::jsonb) AS r
  LEFT JOIN LATERAL ${newestSnapshot('r.id')} n ON true
  WHERE n.share_price IS NULL
     OR (n.share_price, n.tvl, n.base_asset_price_usd) IS DISTINCT FROM (r.share_price, r.tvl, r.base_asset_price_usd)
  ON CONFLICT (vault_id, as_of) DO UPDATE
    SET share_price = EXCLUDED.share_price, tvl = EXCLUDED.tvl, base_asset_price_usd = EXCLUDED.base_asset_price_usd`

/** Sets the live values of the vaults in $1 (a JSON array of ids) to their newest snapshot's, where they differ. */
const liveValuesUpdate = (returning: string) => `UPDATE vaults v
  SET share_price = n.share_price, tvl = n.tvl, base_asset_price_usd = n.base_asset_price_usd, updated_at = CURRENT_TIMESTAMP
  FROM (SELECT DISTINCT id FROM jsonb_array_elements_text($1::jsonb) AS i(id)) i
  CROSS JOIN LATERAL ${newestSnapshot('i.id')} n
  WHERE v.id = i.id
    AND (v.share_price, v.tvl, v.base_asset_price_usd) IS DISTINCT FROM (n.share_price, n.tvl, n.base_asset_price_usd)
  ${returning}`
const LIVE_VALUES_UPDATE = liveValuesUpdate('')
// With webhooks: a vault whose live values moved is a changed vault (vault.updated, "values").
const LIVE_VALUES_UPDATE_CAPTURING = `WITH moved AS (${liveValuesUpdate('RETURNING v.id')})
  INSERT INTO ${CHANGES_TABLE} (kind, id, previous_status) SELECT 'vault_values', id, NULL FROM moved
  ON CONFLICT (kind, id) DO NOTHING`

/** Above this many rows, refresh planner statistics: PGlite has no autovacuum to do it. */
const ANALYZE_THRESHOLD = 1000

/** Compositions, vault snapshots and transactions may only name vaults of the document or of the database. */
async function checkVaultReferences(tx: Tx, doc: ImportDocument): Promise<void> {
  const known = new Set(doc.vaults.map((v) => v.id))
  const refs: { path: (string | number)[]; id: string }[] = []
  const sections = [
    ['compositions', doc.compositions],
    ['vault_snapshots', doc.vault_snapshots],
    ['transactions', doc.transactions],
  ] as const
  for (const [section, rows] of sections) {
    rows.forEach((r, i) => {
      if (!known.has(r.vault_id)) refs.push({ path: [section, i, 'vault_id'], id: r.vault_id })
    })
  }
  if (refs.length === 0) return
  const existing = await tx.vault.findMany({ where: { id: { in: [...new Set(refs.map((r) => r.id))] } }, select: { id: true } })
  for (const { id } of existing) known.add(id)
  const missing = refs.filter((r) => !known.has(r.id))
  if (missing.length > 0) reject(missing.map((r) => ({ path: r.path, message: `unknown vault "${r.id}"` })))
}

/**
 * Validates `doc`, then writes it in one transaction (writeImport). All or nothing. Returns the
 * rows written (inserted or updated) per kind.
 */
export async function importDocument(
  doc: unknown,
  db: Db = prisma,
  { onProgress = () => {}, clock = systemClock }: { onProgress?: (p: ImportProgress) => void; clock?: Clock } = {},
): Promise<ImportCounts> {
  const data = validateImportDocument(doc)
  const importedAt = clock().toISOString()
  // PGlite has a single connection: everything in writeImport goes through `tx`, never `db`.
  return db.$transaction((tx) => writeImport(tx, data, { onProgress, importedAt }), { maxWait: 60_000, timeout: 600_000 })
}

/**
 * Writes a validated document inside the caller's transaction: vaults and transactions are
 * upserted by id, composition snapshots by (vault_id, as_of) with their allocations replaced,
 * vault snapshots by (vault_id, as_of); vault records with new live values add a snapshot at
 * `importedAt`, and every vault touched ends with its newest snapshot's live values (see above).
 * Then the webhook events and the change NOTIFY, so they commit (or not) with the caller's other
 * writes: the chain source (src/sources/store.ts) writes its cursor in the same transaction.
 */
export async function writeImport(
  tx: Tx,
  data: ImportDocument,
  { onProgress = () => {}, importedAt }: { onProgress?: (p: ImportProgress) => void; importedAt: string },
): Promise<ImportCounts> {
  await checkVaultReferences(tx, data)
  // Webhook events (decisions §11) are computed by the writes below when an endpoint wants them.
  const capture = await beginChangeCapture(tx)
  const counts: ImportCounts = { vaults: 0, compositions: 0, vault_snapshots: 0, transactions: 0 }
  const vaultRows = JSON.stringify(data.vaults.map(vaultRow))
  if (data.vaults.length > 0)
    counts.vaults = capture?.vaults ? await countOf(tx, VAULT_UPSERT_CAPTURING, vaultRows) : await tx.$executeRawUnsafe(VAULT_UPSERT, vaultRows)
  onProgress({ kind: 'vaults', done: data.vaults.length, total: data.vaults.length })
  for (const chunk of chunks(data.vault_snapshots, VAULT_SNAPSHOT_CHUNK)) {
    counts.vault_snapshots += await tx.$executeRawUnsafe(VAULT_SNAPSHOT_UPSERT, JSON.stringify(chunk))
    onProgress({ kind: 'vault_snapshots', done: counts.vault_snapshots, total: data.vault_snapshots.length })
  }
  if (data.vaults.length > 0) await tx.$executeRawUnsafe(RECORD_SNAPSHOTS, vaultRows, importedAt)
  await syncLiveValues(tx, [...data.vaults.map((v) => v.id), ...data.vault_snapshots.map((s) => s.vault_id)], capture?.vaults ?? false)
  for (const chunk of chunks(data.compositions, COMPOSITION_CHUNK)) {
    const json = JSON.stringify(chunk)
    if (capture?.vaults) await tx.$executeRawUnsafe(COMPOSITION_CAPTURE, json)
    const inserted = await tx.$executeRawUnsafe(SNAPSHOT_INSERT, json)
    // Only snapshots that already existed can have allocations to replace.
    if (inserted < chunk.length) await tx.$executeRawUnsafe(ALLOCATION_DELETE, json)
    await tx.$executeRawUnsafe(ALLOCATION_INSERT, json)
    counts.compositions += chunk.length
    onProgress({ kind: 'compositions', done: counts.compositions, total: data.compositions.length })
  }
  let written = 0
  for (const chunk of chunks(data.transactions, TRANSACTION_CHUNK)) {
    const json = JSON.stringify(chunk)
    counts.transactions += capture?.transactions ? await countOf(tx, TRANSACTION_UPSERT_CAPTURING, json) : await tx.$executeRawUnsafe(TRANSACTION_UPSERT, json)
    written += chunk.length
    onProgress({ kind: 'transactions', done: written, total: data.transactions.length })
  }
  if (counts.compositions + counts.vault_snapshots + counts.transactions >= ANALYZE_THRESHOLD)
    await tx.$executeRawUnsafe('ANALYZE vaults, composition_snapshots, allocations, vault_snapshots, transactions')
  if (capture) await emitCapturedChanges(tx, capture)
  // Every gateway process drops the answers it derived from the old data (response caches) and
  // tells its subscribers (src/live/hub.ts) which vaults and wallets the import wrote.
  await announceDataChange(tx, {
    vaults: [...data.vaults.map((v) => v.id), ...data.vault_snapshots.map((s) => s.vault_id), ...data.compositions.map((c) => c.vault_id)],
    transactions: data.transactions.map((t) => ({ id: t.id, address: t.address })),
  })
  return counts
}

/**
 * Sets the live values of `vaultIds` to their newest snapshot's where they differ (decisions §9).
 * With `capture` (a webhook endpoint wants vault events, beginChangeCapture), a vault whose values
 * moved is recorded as changed. Also used after snapshots are deleted (a chain reorg).
 */
export async function syncLiveValues(tx: Tx, vaultIds: readonly string[], capture: boolean): Promise<void> {
  if (vaultIds.length === 0) return
  await tx.$executeRawUnsafe(capture ? LIVE_VALUES_UPDATE_CAPTURING : LIVE_VALUES_UPDATE, JSON.stringify([...new Set(vaultIds)]))
}

async function countOf(tx: Tx, sql: string, json: string): Promise<number> {
  const [row] = await tx.$queryRawUnsafe<{ n: number }[]>(sql, json)
  return row!.n
}
