import { badRequest } from '../core/errors.js'
import { type CursorArgument, cursorCodec, ID_PATTERN, isCursorMs, REST_CURSOR } from '../core/signed-cursor.js'
import { TransactionType } from '../generated/prisma/enums.js'

export const TRANSACTION_TYPES: readonly TransactionType[] = Object.values(TransactionType)

/** The `type` query parameter; absent means every type. */
export function parseTypeParam(raw: string | undefined): TransactionType | undefined {
  if (raw === undefined) return undefined
  if (!TRANSACTION_TYPES.includes(raw as TransactionType)) throw badRequest(`type must be one of ${TRANSACTION_TYPES.join(', ')}.`)
  return raw as TransactionType
}

/** What a history page lists; a cursor is only valid for the filter it was issued for. */
export interface HistoryFilter {
  /** Lowercase. */
  address: string
  /** Null: every vault (decisions §14, a wallet across vaults). */
  vaultId: string | null
  type: TransactionType | null
}

/** A row's place in the order (timestamp desc, id desc): the keyset a page continues after. */
export interface HistoryPosition {
  timestamp: Date
  id: string
}

// Cursors of a wallet's history (src/core/signed-cursor.ts): the keyset position and the filter,
// MAC-protected. Version 1's key and layout are kept, so cursors issued before still work.
const codec = cursorCodec('transaction-history', 1, 'address, vault or type filter')

/** `base64url(JSON [version, timestamp ms, id, filter tag]) "." base64url(HMAC-SHA256 truncated to 16 bytes)`. */
export function encodeCursor(filter: HistoryFilter, position: HistoryPosition): string {
  return codec.encode([filter.address, filter.vaultId, filter.type], [position.timestamp.getTime(), position.id])
}

/**
 * The position a cursor continues after. A cursor we did not issue, or issued for another address,
 * vault or type filter, is a 400: never ignored, never applied to a different list.
 */
export function decodeCursor(cursor: string, filter: HistoryFilter, argument: CursorArgument = REST_CURSOR): HistoryPosition {
  const check = (p: unknown[]) => p.length === 2 && isCursorMs(p[0]) && typeof p[1] === 'string' && ID_PATTERN.test(p[1])
  const [ms, id] = codec.decode([filter.address, filter.vaultId, filter.type], cursor, check, argument)
  return { timestamp: new Date(ms as number), id: id as string }
}
