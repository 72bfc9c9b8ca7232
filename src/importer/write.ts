import { prisma, type Db } from '../db/client.js'
import type { Prisma } from '../generated/prisma/client.js'
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
  transactions: number
}

/** Where a long import is: rows of each kind written so far (for a progress display). */
export interface ImportProgress {
  kind: 'vaults' | 'compositions' | 'transactions'
  done: number
  total: number
}

/** Rows per statement: large enough to amortise the round trip, small enough to bound memory. */
const TRANSACTION_CHUNK = 5000
const COMPOSITION_CHUNK = 2000

function chunks<T>(rows: T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size))
  return out
}

/** `INSERT … SELECT FROM jsonb_populate_recordset(NULL::table, $1) ON CONFLICT (key) DO UPDATE` over the named columns. */
function upsertSql(table: string, columns: string[], key: string[], extraUpdates = ''): string {
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
const TRANSACTION_UPSERT = upsertSql('transactions', Object.keys(importShapes.transactions), ['id'])

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

/** Above this many rows, refresh planner statistics: PGlite has no autovacuum to do it. */
const ANALYZE_THRESHOLD = 1000

/** Compositions and transactions may only name vaults of the document or of the database. */
async function checkVaultReferences(tx: Tx, doc: ImportDocument): Promise<void> {
  const known = new Set(doc.vaults.map((v) => v.id))
  const refs: { path: (string | number)[]; id: string }[] = []
  for (const [section, rows] of [['compositions', doc.compositions] as const, ['transactions', doc.transactions] as const]) {
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
 * Validates `doc`, then writes it in one transaction: vaults and transactions are upserted by id,
 * composition snapshots by (vault_id, as_of) with their allocations replaced. All or nothing.
 * Returns the rows written (inserted or updated) per kind.
 */
export async function importDocument(
  doc: unknown,
  db: Db = prisma,
  { onProgress = () => {} }: { onProgress?: (p: ImportProgress) => void } = {},
): Promise<ImportCounts> {
  const data = validateImportDocument(doc)
  // PGlite has a single connection: everything below must go through `tx`, never `db`.
  return db.$transaction(
    async (tx) => {
      await checkVaultReferences(tx, data)
      const counts: ImportCounts = { vaults: 0, compositions: 0, transactions: 0 }
      if (data.vaults.length > 0) counts.vaults = await tx.$executeRawUnsafe(VAULT_UPSERT, JSON.stringify(data.vaults.map(vaultRow)))
      onProgress({ kind: 'vaults', done: data.vaults.length, total: data.vaults.length })
      for (const chunk of chunks(data.compositions, COMPOSITION_CHUNK)) {
        const json = JSON.stringify(chunk)
        const inserted = await tx.$executeRawUnsafe(SNAPSHOT_INSERT, json)
        // Only snapshots that already existed can have allocations to replace.
        if (inserted < chunk.length) await tx.$executeRawUnsafe(ALLOCATION_DELETE, json)
        await tx.$executeRawUnsafe(ALLOCATION_INSERT, json)
        counts.compositions += chunk.length
        onProgress({ kind: 'compositions', done: counts.compositions, total: data.compositions.length })
      }
      let written = 0
      for (const chunk of chunks(data.transactions, TRANSACTION_CHUNK)) {
        counts.transactions += await tx.$executeRawUnsafe(TRANSACTION_UPSERT, JSON.stringify(chunk))
        written += chunk.length
        onProgress({ kind: 'transactions', done: written, total: data.transactions.length })
      }
      if (counts.compositions + counts.transactions >= ANALYZE_THRESHOLD)
        await tx.$executeRawUnsafe('ANALYZE vaults, composition_snapshots, allocations, transactions')
      // Every gateway process drops the answers it derived from the old data (response caches).
      await announceDataChange(tx)
      return counts
    },
    { maxWait: 60_000, timeout: 600_000 },
  )
}
