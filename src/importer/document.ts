import { z } from 'zod'
import { announceDataChange } from './changes.js'
import { prisma, type Db } from '../db/client.js'
import { Decimal, parseAmount } from '../core/decimal.js'
import { badRequest } from '../core/errors.js'
import type { Prisma } from '../generated/prisma/client.js'

// Bulk data load (decisions.md §7). The document is validated whole, then written in one
// transaction with set-based SQL: each chunk of rows travels as ONE jsonb parameter and is
// unpacked by jsonb_to_recordset, so there is no per-row round trip and no bind-parameter limit,
// and amounts reach NUMERIC columns as JSON strings (never as JS numbers).

export type VaultStatus = 'active' | 'paused' | 'closed'
export type TransactionType = 'deposit' | 'withdraw' | 'redeem'
export type TransactionStatus = 'pending' | 'completed' | 'failed' | 'cancelled'

/** A vault in the spec's wire shape plus `base_asset_price_usd`; absent optional fields become null. */
export interface ImportVault {
  id: string
  name: string
  chain: string
  chain_id: string | null
  symbol: string
  base_asset: string
  base_asset_price_usd: string
  status: VaultStatus
  tvl: string
  share_price: string
  perf_fee_bps: number
  mgmt_fee_bps: number | null
  contract: { address: string }
  deposit_constraints: { max_deposit: string | null; min_deposit: string | null; paused: boolean | null }
  withdraw_constraints: {
    instant_liquidity: boolean | null
    instant_slippage_max_bps: number | null
    redeem_24h_threshold_pct_of_aum: number | null
    redeem_48h_above_threshold: boolean | null
  }
  icons: { dark: string | null; light: string | null }
  api_endpoint: string
  description: string | null
  docs_url: string | null
  /** YYYY-MM-DD */
  inception_date: string | null
  strategy_brief: string | null
}

export interface ImportPosition {
  platform: string
  asset: string
  symbol: string
  pct: number
  apy_est_pct: number
  icon: string
}

export interface ImportComposition {
  vault_id: string
  /** RFC 3339 UTC with milliseconds. */
  as_of: string
  positions: ImportPosition[]
}

export interface ImportTransaction {
  id: string
  vault_id: string
  /** Lowercase. */
  address: string
  type: TransactionType
  status: TransactionStatus
  amount: string
  shares: string
  timestamp: string
  completed_at: string | null
  tx_hash: string
}

/**
 * A validated document in canonical form: amounts in plain notation without trailing zeros,
 * timestamps as `toISOString()` (sub-millisecond digits truncated, since storage keeps ms),
 * addresses lowercase, every optional field present (null when absent).
 */
export interface ImportDocument {
  vaults: ImportVault[]
  compositions: ImportComposition[]
  transactions: ImportTransaction[]
}

export interface ImportCounts {
  vaults: number
  compositions: number
  transactions: number
}

// ---------------------------------------------------------------------------------------------
// Validation

type Checked<T> = { ok: true; value: T } | { ok: false; error: string }
type Check<T> = (input: unknown) => Checked<T>

const ok = <T>(value: T): Checked<T> => ({ ok: true, value })
const fail = (error: string): Checked<never> => ({ ok: false, error })

// Scalars are checked by hand so every message is a plain sentence about the field. `.optional()`
// lets an absent key reach the transform, which decides between "is required" and null.
function required<T>(check: Check<T>) {
  return z.unknown().optional().transform((input, ctx): T => {
    const r = input === undefined ? fail('is required') : check(input)
    if (r.ok) return r.value
    ctx.addIssue({ code: 'custom', message: r.error })
    return z.NEVER
  })
}

function nullable<T>(check: Check<T>) {
  return z.unknown().optional().transform((input, ctx): T | null => {
    if (input === undefined || input === null) return null
    const r = check(input)
    if (r.ok) return r.value
    ctx.addIssue({ code: 'custom', message: r.error })
    return z.NEVER
  })
}

const text =
  (max: number): Check<string> =>
  (v) => {
    if (typeof v !== 'string') return fail('must be a string')
    if (v.length === 0) return fail('must not be empty')
    if (v.length > max) return fail(`must be at most ${max} characters`)
    // PostgreSQL text cannot hold NUL; catching it here keeps it a 400 instead of a 500.
    if (v.includes('\u0000')) return fail('must not contain NUL characters')
    // A lone UTF-16 surrogate cannot be stored as UTF-8 either.
    if (/\p{Cs}/u.test(v)) return fail('must be valid Unicode text')
    return ok(v)
  }

// Ids appear in URL paths, so keep them to characters that need no escaping.
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/
const id: Check<string> = (v) => {
  if (typeof v !== 'string') return fail('must be a string')
  return ID_PATTERN.test(v) ? ok(v) : fail('must be 1-128 characters: letters, digits, ".", "_", ":" or "-", starting with a letter or digit')
}

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/
const address: Check<string> = (v) =>
  typeof v === 'string' && EVM_ADDRESS.test(v) ? ok(v.toLowerCase()) : fail('must be an EVM address (0x followed by 40 hex digits)')

const bool: Check<boolean> = (v) => (typeof v === 'boolean' ? ok(v) : fail('must be true or false'))

const INT32_MAX = 2_147_483_647
// Basis points are never negative; the upper bound is the int32 of the wire format and the column.
const bps: Check<number> = (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= INT32_MAX ? ok(v) : fail(`must be an integer from 0 to ${INT32_MAX}`)

const percent: Check<number> = (v) =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 100 ? ok(v) : fail('must be a number from 0 to 100')

const finite: Check<number> = (v) => (typeof v === 'number' && Number.isFinite(v) ? ok(v) : fail('must be a number'))

const oneOf =
  <const T extends string>(values: readonly T[]): Check<T> =>
  (v) =>
    values.includes(v as T) ? ok(v as T) : fail(`must be one of ${values.map((x) => `"${x}"`).join(', ')}`)

const amount: Check<string> = (v) => parseAmount(v)

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/
const TIMESTAMP_ERROR = 'must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z"'

function utcMs(y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number | undefined {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d) // unlike Date.UTC, keeps years 0-99 as written
  if (date.getUTCDate() !== d) return undefined // 31 April, 29 February of a common year, …
  date.setUTCHours(h, mi, s, ms)
  return date.getTime()
}

/** Years 1-9999 only: both what PostgreSQL parses back and what toISOString writes plainly. */
const MIN_MS = utcMs(1, 1, 1)!
const MAX_MS = utcMs(9999, 12, 31, 23, 59, 59, 999)!

const timestamp: Check<string> = (v) => {
  const m = typeof v === 'string' ? RFC3339.exec(v) : null
  if (!m) return fail(TIMESTAMP_ERROR)
  const [, y, mo, d, h, mi, s, frac = '', sign, oh, om] = m
  const local = utcMs(+y!, +mo!, +d!, +h!, +mi!, +s!, +frac.slice(0, 3).padEnd(3, '0'))
  if (local === undefined || (sign && (+oh! > 23 || +om! > 59))) return fail(TIMESTAMP_ERROR)
  const t = local - (sign === '-' ? -1 : 1) * (sign ? (+oh! * 60 + +om!) * 60_000 : 0)
  if (t < MIN_MS || t > MAX_MS) return fail('must be between the years 1 and 9999')
  return ok(new Date(t).toISOString())
}

const date: Check<string> = (v) => {
  const m = typeof v === 'string' ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(v) : null
  return m && +m[1]! >= 1 && utcMs(+m[1]!, +m[2]!, +m[3]!) !== undefined ? ok(v as string) : fail('must be a date in the form YYYY-MM-DD')
}

const vaultSchema = z.strictObject({
  id: required(id),
  name: required(text(200)),
  chain: required(text(100)),
  chain_id: nullable(text(100)),
  symbol: required(text(100)),
  base_asset: required(text(100)),
  base_asset_price_usd: required(amount),
  status: required(oneOf(['active', 'paused', 'closed'])),
  tvl: required(amount),
  share_price: required(amount),
  perf_fee_bps: required(bps),
  mgmt_fee_bps: nullable(bps),
  contract: z.strictObject({ address: required(text(200)) }),
  deposit_constraints: z.strictObject({
    max_deposit: nullable(amount),
    min_deposit: nullable(amount),
    paused: nullable(bool),
  }),
  withdraw_constraints: z.strictObject({
    instant_liquidity: nullable(bool),
    instant_slippage_max_bps: nullable(bps),
    redeem_24h_threshold_pct_of_aum: nullable(percent),
    redeem_48h_above_threshold: nullable(bool),
  }),
  icons: z.strictObject({ dark: nullable(text(2048)), light: nullable(text(2048)) }),
  api_endpoint: required(text(2048)),
  description: nullable(text(10_000)),
  docs_url: nullable(text(2048)),
  inception_date: nullable(date),
  strategy_brief: nullable(text(10_000)),
})

const compositionSchema = z.strictObject({
  vault_id: required(id),
  as_of: required(timestamp),
  positions: z.array(
    z.strictObject({
      platform: required(text(200)),
      asset: required(text(200)),
      symbol: required(text(100)),
      pct: required(percent),
      apy_est_pct: required(finite),
      icon: required(text(2048)),
    }),
  ),
})

const transactionSchema = z.strictObject({
  id: required(id),
  vault_id: required(id),
  address: required(address),
  type: required(oneOf(['deposit', 'withdraw', 'redeem'])),
  status: required(oneOf(['pending', 'completed', 'failed', 'cancelled'])),
  amount: required(amount),
  shares: required(amount),
  timestamp: required(timestamp),
  completed_at: nullable(timestamp),
  tx_hash: required(text(200)),
})

const documentSchema: z.ZodType<ImportDocument> = z.strictObject({
  vaults: z.array(vaultSchema).default([]),
  compositions: z.array(compositionSchema).default([]),
  transactions: z.array(transactionSchema).default([]),
})

interface Issue {
  path: readonly PropertyKey[]
  message: string
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(String(p))) out += out ? `.${String(p)}` : String(p)
    else out += `[${JSON.stringify(String(p))}]` // an unknown key such as "tx hash" stays readable
  }
  return out || 'document'
}

const MAX_REPORTED = 5

function reject(issues: Issue[]): never {
  const shown = issues.slice(0, MAX_REPORTED).map((i) => `${formatPath(i.path)}: ${i.message}`)
  const more = issues.length - shown.length
  throw badRequest(shown.join('; ') + (more > 0 ? `; and ${more} more problem${more === 1 ? '' : 's'}` : ''))
}

function zodIssues(error: z.ZodError): Issue[] {
  return error.issues.flatMap((i): Issue[] => {
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ path: [...i.path, k], message: 'is not a known field' }))
    if (i.code === 'invalid_type') {
      const what = i.expected === 'array' ? 'an array' : i.expected === 'object' ? 'an object' : `a ${i.expected}`
      return [{ path: i.path, message: i.input === undefined ? 'is required' : `must be ${what}` }]
    }
    return [{ path: i.path, message: i.message }]
  })
}

/** Cross-field and cross-row rules that a per-field schema cannot express. */
function consistencyIssues(doc: ImportDocument): Issue[] {
  const issues: Issue[] = []
  const firstVault = new Map<string, number>()
  doc.vaults.forEach((v, i) => {
    const first = firstVault.get(v.id)
    if (first !== undefined) issues.push({ path: ['vaults', i, 'id'], message: `duplicate id "${v.id}" (first at vaults[${first}])` })
    else firstVault.set(v.id, i)
    const { min_deposit: min, max_deposit: max } = v.deposit_constraints
    if (min !== null && max !== null && new Decimal(min).gt(max))
      issues.push({ path: ['vaults', i, 'deposit_constraints', 'min_deposit'], message: 'must not exceed max_deposit' })
  })
  const firstSnapshot = new Map<string, number>()
  doc.compositions.forEach((c, i) => {
    const key = `${c.vault_id}\u0000${c.as_of}`
    const first = firstSnapshot.get(key)
    if (first !== undefined)
      issues.push({ path: ['compositions', i, 'as_of'], message: `duplicate snapshot of vault "${c.vault_id}" at ${c.as_of} (first at compositions[${first}])` })
    else firstSnapshot.set(key, i)
    const firstPosition = new Map<string, number>()
    c.positions.forEach((p, j) => {
      const pkey = `${p.platform}\u0000${p.asset}`
      const f = firstPosition.get(pkey)
      if (f !== undefined)
        issues.push({ path: ['compositions', i, 'positions', j], message: `duplicate platform and asset "${p.platform}"/"${p.asset}" (first at positions[${f}])` })
      else firstPosition.set(pkey, j)
    })
  })
  const firstTx = new Map<string, number>()
  doc.transactions.forEach((t, i) => {
    const first = firstTx.get(t.id)
    if (first !== undefined) issues.push({ path: ['transactions', i, 'id'], message: `duplicate id "${t.id}" (first at transactions[${first}])` })
    else firstTx.set(t.id, i)
    if (t.completed_at !== null) {
      if (t.status === 'pending') issues.push({ path: ['transactions', i, 'completed_at'], message: 'must be null while status is "pending"' })
      else if (t.completed_at < t.timestamp) issues.push({ path: ['transactions', i, 'completed_at'], message: 'must not be earlier than timestamp' })
    }
  })
  return issues
}

/**
 * Validates a whole import document (decisions.md §7) and returns it in canonical form.
 * Throws `bad_request` naming the offending JSON path(s), e.g. `transactions[3].amount: …`.
 * References to vaults outside the document are checked by importDocument, which sees the database.
 */
export function validateImportDocument(doc: unknown): ImportDocument {
  // reportInput tells a missing value ("is required") from a wrong one ("must be an object").
  const parsed = documentSchema.safeParse(doc, { reportInput: true })
  if (!parsed.success) reject(zodIssues(parsed.error))
  const issues = consistencyIssues(parsed.data)
  if (issues.length > 0) reject(issues)
  return parsed.data
}

// ---------------------------------------------------------------------------------------------
// Writing

type Tx = Prisma.TransactionClient

/** Rows per statement: large enough to amortise the round trip, small enough to bound memory. */
const TRANSACTION_CHUNK = 5000
const COMPOSITION_CHUNK = 2000

function chunks<T>(rows: T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size))
  return out
}

/** `INSERT … SELECT FROM jsonb_to_recordset($1) ON CONFLICT (key) DO UPDATE` over named, typed columns. */
function upsertSql(table: string, columns: [name: string, type: string][], key: string[], extraUpdates = ''): string {
  const names = columns.map(([n]) => `"${n}"`).join(', ')
  const record = columns.map(([n, t]) => `"${n}" ${t}`).join(', ')
  const updates = columns
    .filter(([n]) => !key.includes(n))
    .map(([n]) => `"${n}" = EXCLUDED."${n}"`)
    .concat(extraUpdates ? [extraUpdates] : [])
    .join(', ')
  return `INSERT INTO "${table}" (${names}) SELECT ${names} FROM jsonb_to_recordset($1::jsonb) AS r(${record})
    ON CONFLICT (${key.map((k) => `"${k}"`).join(', ')}) DO UPDATE SET ${updates}`
}

const VAULT_UPSERT = upsertSql(
  'vaults',
  [
    ['id', 'text'],
    ['name', 'text'],
    ['chain', 'text'],
    ['chain_id', 'text'],
    ['symbol', 'text'],
    ['base_asset', 'text'],
    ['base_asset_price_usd', 'numeric'],
    ['status', '"VaultStatus"'],
    ['tvl', 'numeric'],
    ['share_price', 'numeric'],
    ['perf_fee_bps', 'integer'],
    ['mgmt_fee_bps', 'integer'],
    ['contract_address', 'text'],
    ['max_deposit', 'numeric'],
    ['min_deposit', 'numeric'],
    ['deposit_paused', 'boolean'],
    ['instant_liquidity', 'boolean'],
    ['instant_slippage_max_bps', 'integer'],
    ['redeem_24h_threshold_pct_of_aum', 'double precision'],
    ['redeem_48h_above_threshold', 'boolean'],
    ['icon_dark', 'text'],
    ['icon_light', 'text'],
    ['api_endpoint', 'text'],
    ['description', 'text'],
    ['docs_url', 'text'],
    ['inception_date', 'date'],
    ['strategy_brief', 'text'],
  ],
  ['id'],
  // Prisma's @updatedAt is client-side only; raw SQL has to maintain it.
  '"updated_at" = CURRENT_TIMESTAMP',
)

const TRANSACTION_UPSERT = upsertSql(
  'transactions',
  [
    ['id', 'text'],
    ['vault_id', 'text'],
    ['address', 'text'],
    ['type', '"TransactionType"'],
    ['status', '"TransactionStatus"'],
    ['amount', 'numeric'],
    ['shares', 'numeric'],
    ['timestamp', 'timestamptz'],
    ['completed_at', 'timestamptz'],
    ['tx_hash', 'text'],
  ],
  ['id'],
)

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
  CROSS JOIN LATERAL jsonb_to_recordset(r.positions) AS p(platform text, asset text, symbol text, pct double precision, apy_est_pct double precision, icon text)`

/** Above this many rows, refresh planner statistics: PGlite has no autovacuum to do it. */
const ANALYZE_THRESHOLD = 1000

const vaultRow = (v: ImportVault) => ({
  id: v.id,
  name: v.name,
  chain: v.chain,
  chain_id: v.chain_id,
  symbol: v.symbol,
  base_asset: v.base_asset,
  base_asset_price_usd: v.base_asset_price_usd,
  status: v.status,
  tvl: v.tvl,
  share_price: v.share_price,
  perf_fee_bps: v.perf_fee_bps,
  mgmt_fee_bps: v.mgmt_fee_bps,
  contract_address: v.contract.address,
  max_deposit: v.deposit_constraints.max_deposit,
  min_deposit: v.deposit_constraints.min_deposit,
  deposit_paused: v.deposit_constraints.paused,
  instant_liquidity: v.withdraw_constraints.instant_liquidity,
  instant_slippage_max_bps: v.withdraw_constraints.instant_slippage_max_bps,
  redeem_24h_threshold_pct_of_aum: v.withdraw_constraints.redeem_24h_threshold_pct_of_aum,
  redeem_48h_above_threshold: v.withdraw_constraints.redeem_48h_above_threshold,
  icon_dark: v.icons.dark,
  icon_light: v.icons.light,
  api_endpoint: v.api_endpoint,
  description: v.description,
  docs_url: v.docs_url,
  inception_date: v.inception_date,
  strategy_brief: v.strategy_brief,
})

/** Compositions and transactions may only name vaults of the document or of the database. */
async function checkVaultReferences(tx: Tx, doc: ImportDocument): Promise<void> {
  const known = new Set(doc.vaults.map((v) => v.id))
  const refs: { path: (string | number)[]; id: string }[] = []
  doc.compositions.forEach((c, i) => known.has(c.vault_id) || refs.push({ path: ['compositions', i, 'vault_id'], id: c.vault_id }))
  doc.transactions.forEach((t, i) => known.has(t.vault_id) || refs.push({ path: ['transactions', i, 'vault_id'], id: t.vault_id }))
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
/** Where a long import is: rows of each kind written so far (for a progress display). */
export interface ImportProgress {
  kind: 'vaults' | 'compositions' | 'transactions'
  done: number
  total: number
}

export async function importDocument(doc: unknown, db: Db = prisma, { onProgress = () => {} }: { onProgress?: (p: ImportProgress) => void } = {}): Promise<ImportCounts> {
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
