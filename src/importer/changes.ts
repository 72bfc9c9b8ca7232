import type { Db } from '../db/client.js'
import type { ChangeFeed } from '../db/listen.js'

// Imports announce themselves on a PostgreSQL channel (NOTIFY is delivered on commit, to every
// session listening on the database, src/db/listen.ts), so every gateway process and instance can
// drop what it derived from the old data: the response cache today.

export const DATA_CHANGED_CHANNEL = 'vaultgate_data_changed'

/** Call inside the writing transaction: listeners hear it when (and only if) it commits. */
export async function announceDataChange(tx: Pick<Db, '$executeRawUnsafe'>): Promise<void> {
  await tx.$executeRawUnsafe(`NOTIFY ${DATA_CHANGED_CHANNEL}`)
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
