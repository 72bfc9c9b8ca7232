import { systemClock, type Clock } from '../core/clock.js'
import type { Db } from '../db/client.js'
import type { Prisma } from '../generated/prisma/client.js'
import { beginChangeCapture, CHANGES_TABLE, emitCapturedChanges } from '../webhooks/emit.js'
import { announceDataChange } from './changes.js'
import { importShapes, MAX_REPORTED, reject, validateImportDocument, type ImportDocument, type ImportVault } from './document.js'
import { sourceOf, type ChunkedSection, type ImportSource, type ImportSummary } from './prepare.js'

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
    SET share_price = EXCLUDED.share_price, tvl = EXCLUDED.tvl, base_asset_price_usd = EXCLUDED.base_asset_price_usd
  RETURNING vault_id`

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

// The freshness contract's bookkeeping (decisions §10, src/freshness/): the import's time, the
// newest data time the database holds, and each written vault's ($3: {vault id: time}), which the
// Data-As-Of of an answer reading that vault is (src/freshness/answer.ts). One statement, so an
// import costs no more than before. Concurrent imports may commit out of order: no time moves back.
const DATA_STATE_UPDATE = `WITH vault_times AS (
    UPDATE vaults v SET data_as_of = GREATEST(v.data_as_of, t.value::timestamptz)
    FROM jsonb_each_text($3::jsonb) AS t WHERE v.id = t.key
  )
  INSERT INTO data_state (id, data_as_of, last_import_at) VALUES (1, $1::timestamptz, $2::timestamptz)
  ON CONFLICT (id) DO UPDATE SET data_as_of = GREATEST(data_state.data_as_of, EXCLUDED.data_as_of),
    last_import_at = GREATEST(data_state.last_import_at, EXCLUDED.last_import_at)`

/**
 * Each vault's data time an import leaves (vaults.data_as_of): the newest time of its rows in the
 * document, or `importedAt` when its live values were recorded as a snapshot, never later than the
 * import itself (newestTimeOf's rule, vault by vault: the gateway's time is their maximum).
 */
export function vaultTimesOf(newestByVault: Record<string, string>, recordedVaults: readonly string[], importedAt: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [id, t] of Object.entries(newestByVault)) out[id] = newestTimeOf(t, null, importedAt)!
  for (const id of recordedVaults) out[id] = importedAt
  return out
}

/**
 * The data time an import leaves (data_state.data_as_of): the newest time of its document
 * (src/importer/prepare.ts summarize) or `recordedAt` when it recorded live values as snapshots,
 * never later than the import itself.
 */
export function newestTimeOf(documentNewest: string | null, recordedAt: string | null, importedAt: string): string | null {
  const times = [documentNewest, recordedAt].filter((t): t is string => t !== null).map((t) => Date.parse(t))
  if (times.length === 0) return null
  return new Date(Math.min(Math.max(...times), Date.parse(importedAt))).toISOString()
}

/**
 * After records were taken back (a chain reorg's rollback, src/sources/store.ts rollBack): each
 * vault's data time (vaults.data_as_of) becomes the newest time its remaining data holds — its
 * newest vault and composition snapshot (one backward probe each on their keys) and its newest
 * transaction time, submitted or completed (a scan of its transactions: no index orders them by
 * time; a rollback is rare) — and data_as_of the newest of those; neither ever later than it was,
 * which keeps an import's clamp of rows dated after it. No data left: null. Run inside the
 * rollback's transaction, so no reader sees the records gone and the old times.
 */
export async function recomputeDataAsOf(tx: Pick<Tx, '$executeRawUnsafe'>): Promise<void> {
  await tx.$executeRawUnsafe(`WITH held AS (
      SELECT v.id, v.data_as_of AS was, GREATEST(
        (SELECT s.as_of FROM vault_snapshots s WHERE s.vault_id = v.id ORDER BY s.as_of DESC LIMIT 1),
        (SELECT c.as_of FROM composition_snapshots c WHERE c.vault_id = v.id ORDER BY c.as_of DESC LIMIT 1),
        (SELECT max(GREATEST(t.timestamp, t.completed_at)) FROM transactions t WHERE t.vault_id = v.id)
      ) AS t FROM vaults v
    ), vault_times AS (
      UPDATE vaults v SET data_as_of = CASE WHEN held.t IS NULL THEN NULL ELSE LEAST(held.was, held.t) END
      FROM held WHERE v.id = held.id AND v.data_as_of IS DISTINCT FROM (CASE WHEN held.t IS NULL THEN NULL ELSE LEAST(held.was, held.t) END)
    )
    UPDATE data_state SET data_as_of = CASE WHEN newest.t IS NULL THEN NULL ELSE LEAST(data_state.data_as_of, newest.t) END
    FROM (SELECT max(t) AS t FROM held) newest WHERE data_state.id = 1`)
}

/** Above this many rows, refresh planner statistics: PGlite has no autovacuum to do it. */
const ANALYZE_THRESHOLD = 1000

/** Compositions, vault snapshots and transactions may only name vaults of the document or of the database. */
async function checkVaultReferences(tx: Tx, { outsideRefs }: ImportSummary): Promise<void> {
  if (outsideRefs.length === 0) return
  const existing = await tx.vault.findMany({ where: { id: { in: outsideRefs.map((r) => r.id) } }, select: { id: true } })
  const known = new Set(existing.map((v) => v.id))
  const missing = outsideRefs.filter((r) => !known.has(r.id))
  if (missing.length === 0) return
  // The problems in document order (sections, then rows): the first few of each id hold the first few of all.
  const order = CHUNKED_SECTIONS_IN_REPORT_ORDER
  const first = missing
    .flatMap((r) => r.first.map(([section, i]) => ({ section, i, id: r.id })))
    .sort((a, b) => order.indexOf(a.section) - order.indexOf(b.section) || a.i - b.i)
  reject(
    first.map((r) => ({ path: [r.section, r.i, 'vault_id'], message: `unknown vault "${r.id}"` })),
    missing.reduce((n, r) => n + r.count, 0),
  )
}

// The stored transactions whose id equals one of the chunk's but for case (foldId in document.ts).
// PostgreSQL (and PGlite, the same engine) compares text ids byte for byte, so without this check
// "T1" after a stored "t1" would become a second row; the expression index keeps it one lookup per id.
const FOLDED_ID_CLASHES = `
SELECT (x.n - 1)::int AS i, x.v->>'id' AS given, t.id AS stored, count(*) OVER ()::int AS total
FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(v, n)
JOIN transactions t ON lower(t.id COLLATE "C") = lower((x.v->>'id') COLLATE "C") AND t.id <> x.v->>'id'
ORDER BY x.n
LIMIT ${MAX_REPORTED}`

/** Refuses transaction ids of a chunk (its first row at `offset`) that differ only in case from stored ones. */
async function checkFoldedIds(tx: Tx, json: string, offset: number): Promise<void> {
  const clashes = await tx.$queryRawUnsafe<{ i: number; given: string; stored: string; total: number }[]>(FOLDED_ID_CLASHES, json)
  if (clashes.length === 0) return
  reject(
    clashes.map((c) => ({
      path: ['transactions', offset + c.i, 'id'],
      message: `"${c.given}" differs only in case from the stored transaction "${c.stored}" (transaction ids are compared without regard to case)`,
    })),
    clashes[0]!.total,
  )
}

/**
 * A document's vaults that would share a chain and contract (decisions §14: `(chain_id,
 * lower(contract_address))` is unique among vaults with a chain_id) with an earlier vault of the
 * document, or with a stored vault the document does not rewrite. Computed with the index's own
 * lower(), so this check and the index (prisma/migrations/*_vault_chain_address) never disagree.
 * $1: the document's vault rows (vaultRow), in document order.
 */
const ADDRESS_CLASHES_SQL = `WITH d AS (
    SELECT r.v->>'id' AS id, r.v->>'chain_id' AS chain_id, lower(r.v->>'contract_address') AS address, r.i - 1 AS i
    FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS r(v, i)
  )
  SELECT d.i::int AS i, d.chain_id, earlier.i::int AS first, stored.id AS stored_id
  FROM d
  LEFT JOIN LATERAL (
    SELECT min(e.i) AS i FROM d e WHERE e.chain_id = d.chain_id AND e.address = d.address AND e.i < d.i
  ) earlier ON true
  LEFT JOIN LATERAL (
    SELECT v.id FROM vaults v
    WHERE v.chain_id = d.chain_id AND lower(v.contract_address) = d.address AND NOT EXISTS (SELECT 1 FROM d e WHERE e.id = v.id)
    LIMIT 1
  ) stored ON true
  WHERE d.chain_id IS NOT NULL AND (earlier.i IS NOT NULL OR stored.id IS NOT NULL)
  ORDER BY d.i`

/** Refuses the whole import, naming each vault whose chain and contract another vault already has. */
async function checkVaultAddresses(tx: Tx, vaultRows: string): Promise<void> {
  const clashes = await tx.$queryRawUnsafe<{ i: number; chain_id: string; first: number | null; stored_id: string | null }[]>(ADDRESS_CLASHES_SQL, vaultRows)
  if (clashes.length === 0) return
  reject(
    clashes.map((c) => ({
      path: ['vaults', c.i, 'contract', 'address'],
      message:
        c.first !== null
          ? `duplicate contract on chain ${c.chain_id} (first at vaults[${c.first}]); a chain and contract address belong to one vault`
          : `vault ${JSON.stringify(c.stored_id)} already has this contract on chain ${c.chain_id}; a chain and contract address belong to one vault`,
    })),
  )
}

const CHUNKED_SECTIONS_IN_REPORT_ORDER: readonly ChunkedSection[] = ['compositions', 'vault_snapshots', 'transactions']

export interface ImportOptions {
  onProgress?: (p: ImportProgress) => void
  clock?: Clock
  /**
   * At most this many rows per statement. Embedded PGlite runs each statement on the event loop:
   * smaller statements let requests be answered between them (src/http/routes/admin.ts).
   */
  maxChunkRows?: number
}

/**
 * Validates `doc`, then writes it in one transaction (writeImport). All or nothing. Returns the
 * rows written (inserted or updated) per kind.
 */
export async function importDocument(doc: unknown, db: Db, options: ImportOptions = {}): Promise<ImportCounts> {
  return importSource(sourceOf(validateImportDocument(doc)), db, options)
}

/**
 * importDocument for a document already valid and canonical (what validateImportDocument returns):
 * the demo seed's generated dataset, which test/demo/demo.test.ts checks is, and whose 140,000
 * snapshots would otherwise cost the first start seconds of validation.
 */
export async function writeDocument(data: ImportDocument, db: Db, options: ImportOptions = {}): Promise<ImportCounts> {
  return importSource(sourceOf(data), db, options)
}

/**
 * Writes an import source (src/importer/prepare.ts: a validated document, in this thread or in a
 * worker) in one transaction; all or nothing. Closes the source.
 */
export async function importSource(
  source: ImportSource,
  db: Db,
  { onProgress = () => {}, clock = systemClock, maxChunkRows }: ImportOptions = {},
): Promise<ImportCounts> {
  const importedAt = clock().toISOString()
  try {
    // PGlite has a single connection: everything in writeSource goes through `tx`, never `db`.
    return await db.$transaction((tx) => writeSource(tx, source, { onProgress, importedAt, maxChunkRows }), { maxWait: 60_000, timeout: 600_000 })
  } finally {
    source.close()
  }
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
  options: { onProgress?: (p: ImportProgress) => void; importedAt: string },
): Promise<ImportCounts> {
  return writeSource(tx, sourceOf(data), options)
}

/** Lets the event loop answer what waits (a health check, a read) between two statements of a long import. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

async function writeSource(
  tx: Tx,
  source: ImportSource,
  { onProgress = () => {}, importedAt, maxChunkRows = Infinity }: { onProgress?: (p: ImportProgress) => void; importedAt: string; maxChunkRows?: number },
): Promise<ImportCounts> {
  const { summary } = source
  const size = (rows: number) => Math.max(1, Math.min(rows, maxChunkRows))
  await checkVaultReferences(tx, summary)
  const vaultRows = JSON.stringify(summary.vaults.map(vaultRow))
  if (summary.vaults.length > 0) await checkVaultAddresses(tx, vaultRows)
  // Webhook events (decisions §11) are computed by the writes below when an endpoint wants them.
  const capture = await beginChangeCapture(tx)
  const counts: ImportCounts = { vaults: 0, compositions: 0, vault_snapshots: 0, transactions: 0 }
  if (summary.vaults.length > 0)
    counts.vaults = capture?.vaults ? await countOf(tx, VAULT_UPSERT_CAPTURING, vaultRows) : await tx.$executeRawUnsafe(VAULT_UPSERT, vaultRows)
  onProgress({ kind: 'vaults', done: summary.vaults.length, total: summary.vaults.length })
  for await (const { json } of source.chunks('vault_snapshots', size(VAULT_SNAPSHOT_CHUNK))) {
    counts.vault_snapshots += await tx.$executeRawUnsafe(VAULT_SNAPSHOT_UPSERT, json)
    onProgress({ kind: 'vault_snapshots', done: counts.vault_snapshots, total: summary.totals.vault_snapshots })
    await turn()
  }
  // The vaults whose live values were recorded as a snapshot at `importedAt` (their data time).
  const recorded =
    summary.vaults.length > 0 ? (await tx.$queryRawUnsafe<{ vault_id: string }[]>(RECORD_SNAPSHOTS, vaultRows, importedAt)).map((r) => r.vault_id) : []
  await syncLiveValues(tx, [...summary.vaults.map((v) => v.id), ...summary.snapshotVaultIds], capture?.vaults ?? false)
  for await (const { json, rows } of source.chunks('compositions', size(COMPOSITION_CHUNK))) {
    if (capture?.vaults) await tx.$executeRawUnsafe(COMPOSITION_CAPTURE, json)
    const inserted = await tx.$executeRawUnsafe(SNAPSHOT_INSERT, json)
    // Only snapshots that already existed can have allocations to replace.
    if (inserted < rows) await tx.$executeRawUnsafe(ALLOCATION_DELETE, json)
    await tx.$executeRawUnsafe(ALLOCATION_INSERT, json)
    counts.compositions += rows
    onProgress({ kind: 'compositions', done: counts.compositions, total: summary.totals.compositions })
    await turn()
  }
  let written = 0
  for await (const { json, rows } of source.chunks('transactions', size(TRANSACTION_CHUNK))) {
    await checkFoldedIds(tx, json, written)
    counts.transactions += capture?.transactions ? await countOf(tx, TRANSACTION_UPSERT_CAPTURING, json) : await tx.$executeRawUnsafe(TRANSACTION_UPSERT, json)
    written += rows
    onProgress({ kind: 'transactions', done: written, total: summary.totals.transactions })
    await turn()
  }
  if (counts.compositions + counts.vault_snapshots + counts.transactions >= ANALYZE_THRESHOLD)
    await tx.$executeRawUnsafe('ANALYZE vaults, composition_snapshots, allocations, vault_snapshots, transactions')
  if (capture) await emitCapturedChanges(tx, capture)
  // Last, so the one row is locked only until the commit that follows (concurrent imports queue here, briefly).
  await tx.$executeRawUnsafe(
    DATA_STATE_UPDATE,
    newestTimeOf(summary.newestTime, recorded.length > 0 ? importedAt : null, importedAt),
    importedAt,
    JSON.stringify(vaultTimesOf(summary.newestByVault, recorded, importedAt)),
  )
  // Every gateway process drops the answers it derived from the old data (response caches) and
  // tells its subscribers (src/live/hub.ts) which vaults and wallets the import wrote.
  await announceDataChange(tx, {
    vaults: [...summary.vaults.map((v) => v.id), ...summary.snapshotVaultIds, ...summary.compositionVaultIds],
    transactions: summary.transactionRefs,
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
