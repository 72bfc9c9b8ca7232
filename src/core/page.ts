import { badRequest } from './errors.js'

/** Page sizes of the vault list, GraphQL and REST alike (the transaction history's limits, decisions.md §4). */
export const PAGE_SIZE = { min: 1, max: 200, default: 50 } as const

/** Rejects page sizes out of range instead of clamping them (decisions.md §4: never clamp silently). */
export function checkPageArgs({ first, last }: { first?: number | null; last?: number | null }): void {
  for (const [name, value] of [['first', first], ['last', last]] as const) {
    if (value != null && (value < PAGE_SIZE.min || value > PAGE_SIZE.max))
      throw badRequest(`${name} must be an integer from ${PAGE_SIZE.min} to ${PAGE_SIZE.max}.`)
  }
}
