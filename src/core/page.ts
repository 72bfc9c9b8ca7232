import { badRequest } from './errors.js'

/**
 * The one page-size policy (spec §8, docs/spec/decisions.md §4): lists give 1 to 200 items per page, 50 by
 * default, for the vault list and the transaction history, in GraphQL and REST alike. A size out
 * of range is refused, never clamped silently.
 */
export const PAGE_SIZE = { min: 1, max: 200, default: 50 } as const

const outOfRange = (name: string) => badRequest(`${name} must be an integer from ${PAGE_SIZE.min} to ${PAGE_SIZE.max}.`)

/** A page size given as a number (GraphQL `first`/`last`, or a parsed `limit`); absent means the default. `name` is the argument's own name. */
export function checkPageSize(value: number | null | undefined, name: string): number {
  if (value === null || value === undefined) return PAGE_SIZE.default
  if (!Number.isInteger(value) || value < PAGE_SIZE.min || value > PAGE_SIZE.max) throw outOfRange(name)
  return value
}

/** A page size given as text (the REST `limit` parameter): decimal digits only, no leading zero ("abc", "1.5", "-1", "", "050" are 400), then the range. */
export function parsePageSize(text: string | undefined, name = 'limit'): number {
  if (text === undefined) return PAGE_SIZE.default
  // Plain decimal digits without a leading zero: `050` is refused like `5e1` (never guessed at).
  if (!/^(0|[1-9]\d{0,8})$/.test(text)) throw outOfRange(name)
  return checkPageSize(Number(text), name)
}

/** Relay connection arguments (`first`, `last`): each checked when given. */
export function checkPageArgs({ first, last }: { first?: number | null; last?: number | null }): void {
  if (first != null) checkPageSize(first, 'first')
  if (last != null) checkPageSize(last, 'last')
}
