import { Decimal } from '../core/decimal.js'
import { badRequest } from '../core/errors.js'
import { checkPageSize } from '../core/page.js'
import { type CursorArgument, cursorCodec, GRAPHQL_AFTER, GRAPHQL_BEFORE, ID_PATTERN } from '../core/signed-cursor.js'
import type { VaultStatus } from '../generated/prisma/enums.js'

// The vault list's pages, with signed cursors (src/core/signed-cursor.ts), so a cursor we did not
// issue, or issued for other filters or another order, is a 400, never a database error.
//
// Orders: by id (the default; keyset on the primary key), or by a value (docs/api/vaults.md
// "Performance history"): `tvl`, `tvlUsd`, `apy7d`, `apy30d`, descending unless asked otherwise. Vaults without
// the value (no USD price, history too short for the window) come last in both directions; ties
// go by id in code-point order. A value-ordered cursor carries the value and the id, so a page
// continues after that place even when the vault it came from has since moved.

/** `search`: a case-insensitive substring of the vault's id, name or symbol (null: every vault). */
export interface VaultListFilter {
  chain: string | null
  status: VaultStatus | null
  search?: string | null
}

export const VAULT_ORDER_FIELDS = ['tvl', 'tvlUsd', 'apy7d', 'apy30d'] as const
export type VaultOrderField = (typeof VAULT_ORDER_FIELDS)[number]
export type OrderDirection = 'asc' | 'desc'
export interface VaultOrder {
  field: VaultOrderField
  direction: OrderDirection
}

/** A search longer than this is refused (no id, name or symbol is that long). */
export const SEARCH_MAX_LENGTH = 100

/** A vault's value under a value order: a decimal string (tvl, tvlUsd) or a percent (APY); null when it has none. */
export type OrderValue = string | number | null

/** A place in the list: the id, and under a value order the value too. */
export interface VaultPosition {
  id: string
  value?: OrderValue
}

/** Which way a page goes from its cursor, and how many vaults it holds. */
export interface VaultPageRequest {
  direction: 'forward' | 'backward'
  /** The place the page continues after (forward) or before (backward); null from an end. */
  from: VaultPosition | null
  size: number
  /** Null: by id. */
  order: VaultOrder | null
}

const codec = cursorCodec('vault-list', 1, 'filter, search or order')
// Without a search or an order the tag is the one cursors carried before either existed: they stay valid.
const filterKey = (f: VaultListFilter, order: VaultOrder | null) =>
  !f.search && !order ? [f.chain, f.status] : [f.chain, f.status, f.search ?? null, order?.field ?? null, order?.direction ?? null]

export const encodeVaultCursor = (filter: VaultListFilter, order: VaultOrder | null, at: VaultPosition) =>
  codec.encode(filterKey(filter, order), order ? [at.value ?? null, at.id] : [at.id])

const DECIMAL = /^-?\d+(\.\d+)?$/
const validValue = (field: VaultOrderField, v: unknown) =>
  v === null || (field.startsWith('apy') ? typeof v === 'number' && Number.isFinite(v) : typeof v === 'string' && DECIMAL.test(v))

export function decodeVaultCursor(filter: VaultListFilter, order: VaultOrder | null, cursor: string, argument: CursorArgument): VaultPosition {
  const validId = (v: unknown) => typeof v === 'string' && ID_PATTERN.test(v)
  const p = codec.decode(
    filterKey(filter, order),
    cursor,
    // Either shape: a cursor of the other kind of order then fails on its filter tag, with the clearer message.
    (p) => (p.length === 2 && (order === null || validValue(order.field, p[0])) && validId(p[1])) || (p.length === 1 && validId(p[0])),
    argument,
  )
  return order ? { value: p[0] as OrderValue, id: p[1] as string } : { id: p[0] as string }
}

/** Checks the search text: at most SEARCH_MAX_LENGTH characters; empty means none. */
export function checkSearch(search: string | null | undefined): string | null {
  if (search == null || search === '') return null
  if (search.length > SEARCH_MAX_LENGTH) throw badRequest(`search must be at most ${SEARCH_MAX_LENGTH} characters.`)
  return search
}

/**
 * Compares two vaults under a value order: by value (descending unless `asc`), vaults without a
 * value last either way, then by id in code-point order.
 */
export function compareByOrder(order: VaultOrder, a: Required<VaultPosition>, b: Required<VaultPosition>): number {
  if (a.value === null || b.value === null) {
    if (a.value !== b.value) return a.value === null ? 1 : -1
  } else {
    const c =
      typeof a.value === 'number' && typeof b.value === 'number' ? Math.sign(a.value - b.value) : new Decimal(String(a.value)).comparedTo(String(b.value))
    if (c !== 0) return order.direction === 'asc' ? c : -c
  }
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

/** Relay arguments as a page request: `first`/`after` forward (the default), `last`/`before` backward. */
export function vaultPageRequest(
  filter: VaultListFilter,
  args: { first?: number | null; after?: string | null; last?: number | null; before?: string | null },
  order: VaultOrder | null = null,
): VaultPageRequest {
  const backward = args.last != null || args.before != null
  if (backward && (args.first != null || args.after != null)) throw badRequest('Use first with after, or last with before, not both.')
  if (backward) {
    return {
      direction: 'backward',
      size: checkPageSize(args.last, 'last'),
      from: args.before == null ? null : decodeVaultCursor(filter, order, args.before, GRAPHQL_BEFORE),
      order,
    }
  }
  return {
    direction: 'forward',
    size: checkPageSize(args.first, 'first'),
    from: args.after == null ? null : decodeVaultCursor(filter, order, args.after, GRAPHQL_AFTER),
    order,
  }
}
