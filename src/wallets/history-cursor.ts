import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { badRequest } from '../core/errors.js'
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
  vaultId: string
  type: TransactionType | null
}

/** A row's place in the order (timestamp desc, id desc): the keyset a page continues after. */
export interface HistoryPosition {
  timestamp: Date
  id: string
}

// The cursor is an integrity check, not a secret: every history is readable by anyone who names the
// address, so a forged cursor could reveal nothing a plain request does not. The MAC only makes a
// cursor we did not issue (hand-edited, truncated, from another service) a clear 400 instead of a
// silently different page. The key is fixed so cursors survive restarts and work across instances;
// bumping the version label invalidates every outstanding cursor (clients then get a 400 and start over).
const CURSOR_VERSION = 1
const CURSOR_KEY = createHash('sha256').update(`vaultgate transaction-history cursor v${CURSOR_VERSION}`).digest()
const MAC_BYTES = 16
const MAX_CURSOR_LENGTH = 512
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/

const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64url')
const mac = (body: string) => createHmac('sha256', CURSOR_KEY).update(body).digest().subarray(0, MAC_BYTES)

/** A short digest of the filter; carried (MAC-protected) in the cursor to recognise foreign cursors. */
export function filterTag(filter: HistoryFilter): string {
  return b64(
    createHash('sha256')
      .update(JSON.stringify([filter.address, filter.vaultId, filter.type]))
      .digest()
      .subarray(0, 12),
  )
}

/** `base64url(JSON [version, timestamp ms, id, filter tag]) "." base64url(HMAC-SHA256 truncated to 16 bytes)`. */
export function encodeCursor(filter: HistoryFilter, position: HistoryPosition): string {
  const body = b64(JSON.stringify([CURSOR_VERSION, position.timestamp.getTime(), position.id, filterTag(filter)]))
  return `${body}.${b64(mac(body))}`
}

const MIN_MS = new Date('0001-01-01T00:00:00.000Z').getTime()
const MAX_MS = new Date('9999-12-31T23:59:59.999Z').getTime()

/**
 * The position a cursor continues after. A cursor we did not issue, or issued for another address,
 * vault or type filter, is a 400: never ignored, never applied to a different list.
 */
export function decodeCursor(cursor: string, filter: HistoryFilter): HistoryPosition {
  const invalid = () => badRequest('cursor is not a cursor this service issued; pass next_cursor exactly as received.')
  if (cursor.length > MAX_CURSOR_LENGTH) throw invalid()
  const [body, tag, ...rest] = cursor.split('.')
  if (!body || !tag || rest.length > 0 || !/^[\w-]+$/.test(body) || !/^[\w-]+$/.test(tag)) throw invalid()
  const given = Buffer.from(tag, 'base64url')
  if (given.length !== MAC_BYTES || !timingSafeEqual(given, mac(body))) throw invalid()
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
  } catch {
    throw invalid()
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) throw invalid()
  const [version, ms, id, forFilter] = parsed as unknown[]
  if (version !== CURSOR_VERSION) throw invalid()
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < MIN_MS || ms > MAX_MS) throw invalid()
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) throw invalid()
  if (forFilter !== filterTag(filter)) {
    throw badRequest('cursor was issued for a different address, vault or type filter; start again from the first page.')
  }
  return { timestamp: new Date(ms), id }
}
