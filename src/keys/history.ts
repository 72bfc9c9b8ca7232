import { type CursorArgument, cursorCodec, isCursorMs, REST_CURSOR } from '../core/signed-cursor.js'
import type { Db } from '../db/client.js'
import { keyHistoryPage, type KeyHistoryPosition, type KeyHistoryRow } from './store.js'

// The owner's key history (docs/spec/decisions.md §13), from the audit trail: newest first, one
// page at a time, with cursors signed and bound to the wallet like the transaction history's
// (src/core/signed-cursor.ts, src/wallets/history-cursor.ts).

export type KeyHistoryType = KeyHistoryRow['type']

export const KEY_HISTORY_TYPES: readonly KeyHistoryType[] = ['created', 'revoked', 'expired', 'disabled', 'replaced']

export interface KeyHistoryEntry {
  type: KeyHistoryType
  keyId: string
  keyPrefix: string
  at: Date
  /** The entry's cursor: the next page starts after it. */
  cursor: string
}

const codec = cursorCodec('key-history', 1, 'wallet')
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

function encode(wallet: string, row: KeyHistoryRow): string {
  return codec.encode([wallet], [row.at.getTime(), row.seq, row.key_id])
}

/** The position a cursor continues after; a 400 for a cursor we did not issue, or issued for another wallet. */
export function decodeHistoryCursor(wallet: string, cursor: string, argument: CursorArgument = REST_CURSOR): KeyHistoryPosition {
  const check = (p: unknown[]) =>
    p.length === 3 && isCursorMs(p[0]) && typeof p[1] === 'string' && /^\d{1,19}$/.test(p[1]) && typeof p[2] === 'string' && UUID.test(p[2])
  const [ms, seq, keyId] = codec.decode([wallet], cursor, check, argument)
  return { at: new Date(ms as number), seq: seq as string, keyId: keyId as string }
}

/** One page of the wallet's key history as of `now`, and whether more follow. */
export async function keyHistory(
  db: Db,
  wallet: string,
  now: Date,
  after: KeyHistoryPosition | null,
  limit: number,
): Promise<{ entries: KeyHistoryEntry[]; hasNextPage: boolean }> {
  const rows = await keyHistoryPage(db, wallet, now, after, limit + 1)
  const entries = rows.slice(0, limit).map((row) => ({ type: row.type, keyId: row.key_id, keyPrefix: row.key_prefix, at: row.at, cursor: encode(wallet, row) }))
  return { entries, hasNextPage: rows.length > limit }
}
