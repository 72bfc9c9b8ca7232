import type { ChangeFeed } from '../db/listen.js'
import { WEBHOOK_CHANNEL } from './store.js'

// Waking the delivery workers. emitEvents(), the import's emission and the replays NOTIFY
// WEBHOOK_CHANNEL inside their transaction, so every instance hears of new work when (and only
// when) it commits. The worker listens through the process' one LISTEN connection (db/listen.ts)
// and polls at its idle interval whether or not it hears anything, so a lost notification only
// delays a delivery, it never strands one.

export { WEBHOOK_CHANNEL } from './store.js'

export interface WakeupSource {
  /** Calls `wake` whenever new deliveries may be due; returns the unsubscribe function. */
  subscribe(wake: () => void): () => void
}

/** Wake-ups from the change feed: every NOTIFY on the channel, and every time the feed is live again (notifications sent meanwhile are lost). */
export function feedWakeups(feed: Pick<ChangeFeed, 'on' | 'onLive'>): WakeupSource {
  return {
    subscribe(wake) {
      const off = feed.on(WEBHOOK_CHANNEL, () => wake())
      const offLive = feed.onLive((live) => {
        if (live) wake()
      })
      return () => {
        off()
        offLive()
      }
    },
  }
}
