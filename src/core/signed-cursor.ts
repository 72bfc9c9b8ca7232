import { createHash, createHmac, createSecretKey, timingSafeEqual } from 'node:crypto'
import { badRequest } from './errors.js'

// Opaque page cursors: `base64url(JSON [version, ...position, filter tag]) "." base64url(HMAC)`.
// A cursor is an integrity check, not a secret: the lists are readable by anyone who names them, so
// a forged cursor could reveal nothing a plain request does not. The MAC makes a cursor we did not
// issue (hand-edited, truncated, pasted from elsewhere) a clear 400 `bad_request` instead of a
// silently different page or a database error, and the filter tag one issued for another list.
// Keys are fixed per list kind so cursors survive restarts and work across instances; bumping the
// version invalidates every outstanding cursor of that kind (clients get a 400 and start over).

const MAC_BYTES = 16
const MAX_CURSOR_LENGTH = 512

const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64url')

/** What a list's cursor carries: its place in the list's order, as JSON values. */
export type Position = readonly (string | number | null)[]

/** How a refused cursor is named to the caller: REST's `cursor` (from `next_cursor`), GraphQL's `after` (from `endCursor`). */
export interface CursorArgument {
  name: string
  from: string
}
export const REST_CURSOR: CursorArgument = { name: 'cursor', from: 'next_cursor' }
export const GRAPHQL_AFTER: CursorArgument = { name: 'after', from: 'pageInfo.endCursor' }
export const GRAPHQL_BEFORE: CursorArgument = { name: 'before', from: 'pageInfo.startCursor' }

export interface CursorCodec {
  /** `filter`: the list's parameters (JSON-encodable); a cursor is only valid for the same filter. */
  encode(filter: unknown, position: Position): string
  /** The position, after checking the MAC, version, shape (`check`) and filter; AppError `bad_request` otherwise. */
  decode(filter: unknown, cursor: string, check: (position: unknown[]) => boolean, argument: CursorArgument): unknown[]
}

/** A codec for one kind of list (`kind`, e.g. "transaction-history"); `filterName` says what a foreign cursor was issued for. */
export function cursorCodec(kind: string, version: number, filterName: string): CursorCodec {
  // A KeyObject: an HMAC keyed by a Buffer imports the key anew each time (about 5× the cost).
  const key = createSecretKey(createHash('sha256').update(`vaultgate ${kind} cursor v${version}`).digest())
  const mac = (body: string) => createHmac('sha256', key).update(body).digest().subarray(0, MAC_BYTES)
  // The last filter's tag: a page's cursors all carry the same one.
  let last: { json: string; tag: string } | undefined
  const tagOf = (filter: unknown) => {
    const json = JSON.stringify(filter)
    if (last?.json !== json) last = { json, tag: b64(createHash('sha256').update(json).digest().subarray(0, 12)) }
    return last.tag
  }
  return {
    encode(filter, position) {
      const body = b64(JSON.stringify([version, ...position, tagOf(filter)]))
      return `${body}.${b64(mac(body))}`
    },
    decode(filter, cursor, check, { name, from }) {
      const invalid = () => badRequest(`${name} is not a cursor this service issued; pass ${from} exactly as received.`)
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
      if (!Array.isArray(parsed) || parsed.length < 2 || parsed[0] !== version) throw invalid()
      const position = parsed.slice(1, -1)
      if (!check(position)) throw invalid()
      if (parsed.at(-1) !== tagOf(filter)) throw badRequest(`${name} was issued for a different ${filterName}; start again from the first page.`)
      return position
    },
  }
}

/** Ids as the importer accepts them (src/importer/document.ts). */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/

const MIN_MS = new Date('0001-01-01T00:00:00.000Z').getTime()
const MAX_MS = new Date('9999-12-31T23:59:59.999Z').getTime()

/** A timestamp in milliseconds as a cursor may carry it. */
export const isCursorMs = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= MIN_MS && v <= MAX_MS

/**
 * A connection's edges whose cursors are signed when read, once each: a page answered without
 * edge cursors (the REST shim asks for pageInfo.endCursor only) signs one cursor, not one per row.
 */
export function lazyEdges<N>(nodes: readonly N[], cursorOf: (node: N) => string): { readonly cursor: string; node: N }[] {
  return nodes.map((node) => {
    let cursor: string | undefined
    return {
      node,
      get cursor() {
        cursor ??= cursorOf(node)
        return cursor
      },
    }
  })
}
