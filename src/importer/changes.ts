import type { Db } from '../db/client.js'
import type { ChangeFeed } from '../db/listen.js'

// Imports announce themselves on a PostgreSQL channel (NOTIFY is delivered on commit, to every
// session listening on the database, src/db/listen.ts), so every gateway process and instance can
// drop what it derived from the old data (the response cache) and tell its subscribers
// (src/live/hub.ts) which vaults and wallets changed.
//
// The payload names ids only: `{"v":[vault ids],"w":{"<address>":[transaction ids]}}`. A NOTIFY
// payload must stay under 8000 bytes, so a large change is announced in several notifications of at
// most ANNOUNCEMENT_BYTES each (one statement whatever their number); every notification is a
// complete announcement of its part, and listeners treat each on its own. An empty payload (a
// NOTIFY sent by hand, by an older gateway) means "something changed, which is unknown".

export const DATA_CHANGED_CHANNEL = 'vaultgate_data_changed'

/** What a committed write changed: vaults (live values, history, composition, record) and transactions by wallet. */
export interface DataChange {
  vaults: readonly string[]
  /** Transactions added or updated, with their wallet (lowercase address). */
  transactions: readonly { id: string; address: string }[]
}

/** One notification's content, decoded; `all`: the payload named nothing (every vault may have changed). */
export interface DataAnnouncement {
  all: boolean
  vaults: string[]
  /** Wallet → ids of its transactions added or updated. */
  wallets: Map<string, string[]>
}

/** Bytes of one payload at most (PostgreSQL refuses 8000 and more). */
export const ANNOUNCEMENT_BYTES = 7900

/**
 * The payloads announcing `change`, each under ANNOUNCEMENT_BYTES. Ids are at most 128 ASCII
 * characters (src/importer/document.ts) and addresses 42, so every entry fits one payload.
 */
export function announcementPayloads(change: DataChange, maxBytes = ANNOUNCEMENT_BYTES): string[] {
  const payloads: string[] = []
  let vaults: string[] = []
  let wallets: Record<string, string[]> = {}
  // {"v":[],"w":{}} is 15 bytes; each vault id adds its JSON length + 1 (the comma), each new
  // wallet its quoted address + 4 (`:[]` and a comma), each transaction id its JSON length + 1.
  let size = 15
  const flush = () => {
    if (vaults.length === 0 && Object.keys(wallets).length === 0) return
    payloads.push(JSON.stringify({ v: vaults, w: wallets }))
    vaults = []
    wallets = {}
    size = 15
  }
  const bytes = (s: string) => Buffer.byteLength(JSON.stringify(s))
  for (const id of new Set(change.vaults)) {
    const add = bytes(id) + 1
    if (size + add > maxBytes) flush()
    vaults.push(id)
    size += add
  }
  const seen = new Set<string>()
  for (const { id, address } of change.transactions) {
    if (seen.has(id)) continue
    seen.add(id)
    let add = bytes(id) + 1
    if (!wallets[address]) add += bytes(address) + 4
    if (size + add > maxBytes) {
      flush()
      add = bytes(id) + 1 + bytes(address) + 4
    }
    ;(wallets[address] ??= []).push(id)
    size += add
  }
  flush()
  return payloads
}

/** Decodes one payload; anything unreadable counts as "something changed" (all). */
export function parseAnnouncement(payload: string): DataAnnouncement {
  const all: DataAnnouncement = { all: true, vaults: [], wallets: new Map() }
  if (payload === '') return all
  try {
    const p = JSON.parse(payload) as { v?: unknown; w?: unknown }
    const vaults = Array.isArray(p.v) ? p.v.filter((v): v is string => typeof v === 'string') : []
    const wallets = new Map<string, string[]>()
    if (p.w && typeof p.w === 'object')
      for (const [address, ids] of Object.entries(p.w))
        if (Array.isArray(ids))
          wallets.set(
            address,
            ids.filter((i): i is string => typeof i === 'string'),
          )
    return { all: false, vaults, wallets }
  } catch {
    return all
  }
}

/**
 * Call inside the writing transaction: listeners hear it when (and only if) it commits. Always at
 * least one notification (the response caches empty on any), in one statement however many.
 */
export async function announceDataChange(tx: Pick<Db, '$executeRawUnsafe'>, change: DataChange = { vaults: [], transactions: [] }): Promise<void> {
  const payloads = announcementPayloads(change)
  await tx.$executeRawUnsafe(`SELECT pg_notify('${DATA_CHANGED_CHANNEL}', p) FROM unnest($1::text[]) AS p`, payloads.length > 0 ? payloads : ['{}'])
}

export interface DataChangeHandlers {
  onChange(): void
  /** True once listening (again), false when the feed is lost and changes could be missed. */
  onLive(live: boolean): void
}

export interface DataChangeFeed {
  /** Resolves once the first attempt to listen has succeeded or failed. */
  ready: Promise<void>
  stop(): Promise<void>
}

/** Calls `onChange` for every committed import, on the process' change feed, until stopped. */
export function watchDataChanges(feed: ChangeFeed, handlers: DataChangeHandlers): DataChangeFeed {
  const off = feed.on(DATA_CHANGED_CHANNEL, () => handlers.onChange())
  const offLive = feed.onLive((live) => handlers.onLive(live))
  return {
    ready: feed.ready,
    stop: async () => {
      off()
      offLive()
      handlers.onLive(false)
    },
  }
}
