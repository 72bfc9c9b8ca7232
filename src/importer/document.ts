import { z } from 'zod'
import { Decimal, parseAmount } from '../core/decimal.js'
import { badRequest, quoted } from '../core/errors.js'
import { TransactionStatus, TransactionType, VaultStatus } from '../generated/prisma/enums.js'
import { normalizeAddress } from '../wallets/address.js'
import { parseTimestamp, utcMs } from '../core/timestamp.js'

// The bulk-load document (docs/spec/decisions.md §7): its schema, and its validation as a whole. The types
// of a validated document are the schema's output (src/importer/write.ts writes them).

// ---------------------------------------------------------------------------------------------
// Validation

type Checked<T> = { ok: true; value: T } | { ok: false; error: string }
type Check<T> = (input: unknown) => Checked<T>

const ok = <T>(value: T): Checked<T> => ({ ok: true, value })
const fail = (error: string): Checked<never> => ({ ok: false, error })

// Scalars are checked by hand so every message is a plain sentence about the field. `.optional()`
// lets an absent key reach the transform, which decides between "is required" and null.
function required<T>(check: Check<T>) {
  return z
    .unknown()
    .optional()
    .transform((input, ctx): T => {
      const r = input === undefined ? fail('is required') : check(input)
      if (r.ok) return r.value
      ctx.addIssue({ code: 'custom', message: r.error })
      return z.NEVER
    })
}

function nullable<T>(check: Check<T>) {
  return z
    .unknown()
    .optional()
    .transform((input, ctx): T | null => {
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

/**
 * A transaction id as ids are compared: ASCII case folded (ids are ASCII, ID_PATTERN), the same as
 * `lower(id COLLATE "C")` in SQL (the transactions_id_folded_idx index, src/importer/write.ts).
 */
export const foldId = (id: string): string => id.toLowerCase()

// Ids appear in URL paths, so keep them to characters that need no escaping.
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/
const id: Check<string> = (v) => {
  if (typeof v !== 'string') return fail('must be a string')
  return ID_PATTERN.test(v) ? ok(v) : fail('must be 1-128 characters: letters, digits, ".", "_", ":" or "-", starting with a letter or digit')
}

const address: Check<string> = (v) => {
  const normalized = normalizeAddress(v)
  return normalized === undefined ? fail('must be an EVM address (0x followed by 40 hex digits)') : ok(normalized)
}

/** An EVM transaction hash: 0x and 64 hex digits, stored lowercase. */
const txHash: Check<string> = (v) =>
  typeof v === 'string' && /^0x[0-9a-fA-F]{64}$/.test(v) ? ok(v.toLowerCase()) : fail('must be 0x followed by 64 hex digits')

const bool: Check<boolean> = (v) => (typeof v === 'boolean' ? ok(v) : fail('must be true or false'))

const INT32_MAX = 2_147_483_647
// Basis points are never negative; the upper bound is the int32 of the wire format and the column.
const bps: Check<number> = (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= INT32_MAX ? ok(v) : fail(`must be an integer from 0 to ${INT32_MAX}`)

const percent: Check<number> = (v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 100 ? ok(v) : fail('must be a number from 0 to 100'))

const finite: Check<number> = (v) => (typeof v === 'number' && Number.isFinite(v) ? ok(v) : fail('must be a number'))

const oneOf =
  <const T extends string>(values: readonly T[]): Check<T> =>
  (v) =>
    values.includes(v as T) ? ok(v as T) : fail(`must be one of ${values.map((x) => `"${x}"`).join(', ')}`)

const amount: Check<string> = (v) => parseAmount(v)

const timestamp: Check<string> = (v) => {
  const r = parseTimestamp(v)
  return r.ok ? ok(new Date(r.ms).toISOString()) : fail(r.error)
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
  // Null (or left out) when unknown (decisions §9): tvl_usd and position_value_usd are null then.
  base_asset_price_usd: nullable(amount),
  status: required(oneOf(Object.values(VaultStatus))),
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

const positionSchema = z.strictObject({
  platform: required(text(200)),
  asset: required(text(200)),
  symbol: required(text(100)),
  pct: required(percent),
  apy_est_pct: required(finite),
  icon: required(text(2048)),
})

const compositionSchema = z.strictObject({
  vault_id: required(id),
  as_of: required(timestamp),
  positions: z.array(positionSchema),
})

/** One observation of a vault's live values (decisions §9). */
const vaultSnapshotSchema = z.strictObject({
  vault_id: required(id),
  as_of: required(timestamp),
  share_price: required(amount),
  tvl: required(amount),
  base_asset_price_usd: nullable(amount),
})

const transactionSchema = z.strictObject({
  id: required(id),
  vault_id: required(id),
  address: required(address),
  type: required(oneOf(Object.values(TransactionType))),
  status: required(oneOf(Object.values(TransactionStatus))),
  amount: required(amount),
  shares: required(amount),
  timestamp: required(timestamp),
  completed_at: nullable(timestamp),
  tx_hash: required(txHash),
})

const documentSchema = z.strictObject({
  vaults: z.array(vaultSchema).default([]),
  compositions: z.array(compositionSchema).default([]),
  vault_snapshots: z.array(vaultSnapshotSchema).default([]),
  transactions: z.array(transactionSchema).default([]),
})

/**
 * A validated document in canonical form: amounts in plain notation without trailing zeros,
 * timestamps as `toISOString()` (sub-millisecond digits truncated, since storage keeps ms),
 * addresses lowercase, every optional field present (null when absent).
 */
export type ImportDocument = z.output<typeof documentSchema>
/** A vault in the spec's wire shape plus `base_asset_price_usd`; absent optional fields become null. */
export type ImportVault = z.output<typeof vaultSchema>
/** A vault record as sent: every field optional and unchecked until vaultRecord or the document's validation. */
export type ImportVaultInput = z.input<typeof vaultSchema>
export type ImportComposition = z.output<typeof compositionSchema>
export type ImportPosition = z.output<typeof positionSchema>
export type ImportVaultSnapshot = z.output<typeof vaultSnapshotSchema>
export type ImportTransaction = z.output<typeof transactionSchema>

/** The keys of the records of each section: the columns src/importer/write.ts writes. */
export const importShapes = { vaults: vaultSchema.shape, vault_snapshots: vaultSnapshotSchema.shape, transactions: transactionSchema.shape }

export interface Issue {
  path: readonly PropertyKey[]
  message: string
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(String(p))) out += out ? `.${String(p)}` : String(p)
    else out += `[${quoted(String(p))}]` // an unknown key such as "tx hash" stays readable (a long one is not repeated)
  }
  return out || 'document'
}

/** Problems named in one refusal; the rest are counted. */
export const MAX_REPORTED = 5

/** `total`: how many problems there are, when `issues` holds only the first of them. */
export function reject(issues: Issue[], total = issues.length): never {
  const shown = issues.slice(0, MAX_REPORTED).map((i) => `${formatPath(i.path)}: ${i.message}`)
  const more = total - shown.length
  throw badRequest(shown.join('; ') + (more > 0 ? `; and ${more} more problem${more === 1 ? '' : 's'}` : ''))
}

/** Zod's issues as sentences about fields; parse with `reportInput: true` so a missing value reads "is required". */
export function zodIssues(error: z.ZodError): Issue[] {
  return error.issues.flatMap((i): Issue[] => {
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ path: [...i.path, k], message: 'is not a known field' }))
    if (i.code === 'invalid_type') {
      const what = i.expected === 'array' ? 'an array' : i.expected === 'object' ? 'an object' : `a ${i.expected}`
      return [{ path: i.path, message: i.input === undefined ? 'is required' : `must be ${what}` }]
    }
    return [{ path: i.path, message: i.message }]
  })
}

/** One issue per repeated key, naming where the key first appeared (records are keyed, §7). */
function flagDuplicates<T>(issues: Issue[], items: readonly T[], keyOf: (item: T) => string, issue: (item: T, index: number, first: number) => Issue) {
  const first = new Map<string, number>()
  items.forEach((item, i) => {
    const key = keyOf(item)
    const f = first.get(key)
    if (f !== undefined) issues.push(issue(item, i, f))
    else first.set(key, i)
  })
}

/** A second snapshot of one vault at one time, in either snapshot section (their key is the same). */
function flagDuplicateSnapshots(issues: Issue[], section: 'compositions' | 'vault_snapshots', rows: readonly { vault_id: string; as_of: string }[]) {
  flagDuplicates(
    issues,
    rows,
    (r) => `${r.vault_id}\u0000${r.as_of}`,
    (r, i, first) => ({ path: [section, i, 'as_of'], message: `duplicate snapshot of vault "${r.vault_id}" at ${r.as_of} (first at ${section}[${first}])` }),
  )
}

/** Cross-field and cross-row rules that a per-field schema cannot express. */
export function consistencyIssues(doc: ImportDocument): Issue[] {
  const issues: Issue[] = []
  flagDuplicates(
    issues,
    doc.vaults,
    (v) => v.id,
    (v, i, first) => ({ path: ['vaults', i, 'id'], message: `duplicate id "${v.id}" (first at vaults[${first}])` }),
  )
  doc.vaults.forEach((v, i) => {
    const { min_deposit: min, max_deposit: max } = v.deposit_constraints
    if (min !== null && max !== null && new Decimal(min).gt(max))
      issues.push({ path: ['vaults', i, 'deposit_constraints', 'min_deposit'], message: 'must not exceed max_deposit' })
  })
  flagDuplicateSnapshots(issues, 'compositions', doc.compositions)
  doc.compositions.forEach((c, i) => {
    // The allocations of a snapshot are the whole vault: their pct add up to 100 (an empty list, a
    // vault not yet allocated, too). Summed exactly: floating point cannot move the tolerance.
    if (c.positions.length > 0) {
      const sum = c.positions.reduce((acc, p) => acc.plus(new Decimal(String(p.pct))), new Decimal(0))
      if (sum.minus(100).abs().gt('0.01'))
        issues.push({ path: ['compositions', i, 'positions'], message: `pct values must sum to 100 (± 0.01); they sum to ${sum.toFixed()}` })
    }
    flagDuplicates(
      issues,
      c.positions,
      (p) => `${p.platform}\u0000${p.asset}`,
      (p, j, first) => ({
        path: ['compositions', i, 'positions', j],
        message: `duplicate platform and asset "${p.platform}"/"${p.asset}" (first at positions[${first}])`,
      }),
    )
  })
  flagDuplicateSnapshots(issues, 'vault_snapshots', doc.vault_snapshots)
  // Transaction ids are compared without regard to case (foldId): "T1" and "t1" are one transaction.
  flagDuplicates(
    issues,
    doc.transactions,
    (t) => foldId(t.id),
    (t, i, first) => {
      const earlier = doc.transactions[first]!.id
      return {
        path: ['transactions', i, 'id'],
        message:
          earlier === t.id
            ? `duplicate id "${t.id}" (first at transactions[${first}])`
            : `duplicate id "${t.id}": differs only in case from transactions[${first}].id "${earlier}" (transaction ids are compared without regard to case)`,
      }
    },
  )
  doc.transactions.forEach((t, i) => {
    if (t.completed_at === null && t.status === 'completed')
      issues.push({ path: ['transactions', i, 'completed_at'], message: 'is required when status is "completed"' })
    // decisions §14: `claimable` is a redeem's state between fulfilment and claim.
    if (t.status === 'claimable' && t.type !== 'redeem')
      issues.push({ path: ['transactions', i, 'status'], message: `"claimable" is only for redeems, not for a ${t.type}` })
    if (t.completed_at !== null) {
      if (t.status === 'pending' || t.status === 'claimable')
        issues.push({ path: ['transactions', i, 'completed_at'], message: `must be null while status is "${t.status}"` })
      else if (t.completed_at < t.timestamp) issues.push({ path: ['transactions', i, 'completed_at'], message: 'must not be earlier than timestamp' })
    }
  })
  // Duplicates are found per section, the other rules per record: list them record by record, in
  // document order (a stable sort), as people read the document.
  const section = (i: Issue) => SECTIONS.indexOf(i.path[0] as (typeof SECTIONS)[number])
  return issues.sort((a, b) => section(a) - section(b) || Number(a.path[1]) - Number(b.path[1]))
}

const SECTIONS = ['vaults', 'compositions', 'vault_snapshots', 'transactions'] as const

/** One vault record validated and made canonical (absent optional fields null), as in a document. */
export function vaultRecord(input: ImportVaultInput): ImportVault {
  const parsed = vaultSchema.safeParse(input, { reportInput: true })
  if (!parsed.success) reject(zodIssues(parsed.error))
  return parsed.data
}

/**
 * Validates a whole import document (docs/spec/decisions.md §7) and returns it in canonical form.
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
