import { badRequest } from '../core/errors.js'
import { checkPageSize } from '../core/page.js'
import { type CursorArgument, cursorCodec, GRAPHQL_AFTER, GRAPHQL_BEFORE, ID_PATTERN } from '../core/signed-cursor.js'
import type { VaultStatus } from '../generated/prisma/enums.js'

// The vault list's pages: keyset on the vault id, with signed cursors (src/core/signed-cursor.ts),
// so a cursor we did not issue, or issued for other filters, is a 400, never a database error.

export interface VaultListFilter {
  chain: string | null
  status: VaultStatus | null
}

/** Which way a page goes from its cursor, and how many vaults it holds. */
export interface VaultPageRequest {
  direction: 'forward' | 'backward'
  /** The id the page continues after (forward) or before (backward); null from an end. */
  from: string | null
  size: number
}

const codec = cursorCodec('vault-list', 1, 'chain or status filter')
const filterKey = (f: VaultListFilter) => [f.chain, f.status]

export const encodeVaultCursor = (filter: VaultListFilter, id: string) => codec.encode(filterKey(filter), [id])

export function decodeVaultCursor(filter: VaultListFilter, cursor: string, argument: CursorArgument): string {
  const [id] = codec.decode(filterKey(filter), cursor, (p) => p.length === 1 && typeof p[0] === 'string' && ID_PATTERN.test(p[0]), argument)
  return id as string
}

/** Relay arguments as a page request: `first`/`after` forward (the default), `last`/`before` backward. */
export function vaultPageRequest(
  filter: VaultListFilter,
  args: { first?: number | null; after?: string | null; last?: number | null; before?: string | null },
): VaultPageRequest {
  const backward = args.last != null || args.before != null
  if (backward && (args.first != null || args.after != null)) throw badRequest('Use first with after, or last with before, not both.')
  if (backward) {
    return {
      direction: 'backward',
      size: checkPageSize(args.last, 'last'),
      from: args.before == null ? null : decodeVaultCursor(filter, args.before, GRAPHQL_BEFORE),
    }
  }
  return {
    direction: 'forward',
    size: checkPageSize(args.first, 'first'),
    from: args.after == null ? null : decodeVaultCursor(filter, args.after, GRAPHQL_AFTER),
  }
}
