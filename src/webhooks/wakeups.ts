// Waking the delivery workers. emitEvents() and the replay calls NOTIFY this channel inside their
// transaction, so every instance hears of new work when (and only when) it commits. Listening is
// kept behind this small interface because the gateway shares one LISTEN connection per process
// (src/db/); the worker polls at its idle interval whether or not it has a wake-up source, so a
// lost notification only delays a delivery, it never strands one.

export const WEBHOOK_CHANNEL = 'vaultgate_webhooks'

export interface WakeupSource {
  /** Calls `wake` whenever new deliveries may be due; returns the unsubscribe function. */
  subscribe(wake: () => void): () => void
}

/** The shape of PGlite's `listen` and of a shared LISTEN connection's. */
export type Listen = (channel: string, onNotify: () => void) => Promise<() => Promise<void>>

/** A wake-up source over a LISTEN primitive, listening on the webhook channel while subscribed. */
export function channelWakeups(listen: Listen): WakeupSource {
  return {
    subscribe(wake) {
      const stop = listen(WEBHOOK_CHANNEL, wake).catch(() => undefined)
      return () => void stop.then((unlisten) => unlisten?.()).catch(() => {})
    },
  }
}

/** In-process wake-ups (one process, or a test): `wake()` reaches every subscriber. */
export function localWakeups(): WakeupSource & { wake(): void } {
  const subscribers = new Set<() => void>()
  return {
    subscribe(wake) {
      subscribers.add(wake)
      return () => subscribers.delete(wake)
    },
    wake() {
      for (const s of subscribers) s()
    },
  }
}
