import type { ChangeFeed } from '../db/listen.js'
import { DATA_CHANGED_CHANNEL, parseAnnouncement } from '../importer/changes.js'
import { KEY_CHANNEL, parseKeyNotification } from '../keys/changes.js'

// The fan-out of one gateway instance (docs/spec/decisions.md §11): the process' one LISTEN
// connection (src/db/listen.ts; PGlite's own listener when embedded) hears every commit on every
// instance, and this hub hands each notification to the subscribers it concerns, looked up by
// vault id, wallet or key owner: a notification costs one JSON parse and a map lookup per id it
// names, whatever the number of subscribers. Subscribers register a callback and get back the
// function that removes it; nothing else holds them (a disconnect leaves nothing behind).

export interface LiveHub {
  /** `fn` runs after each commit that changed the vault (or changed something unknown). */
  onVault(id: string, fn: () => void): () => void
  /** `fn` gets the ids of the wallet's transactions each commit added or updated. */
  onWallet(address: string, fn: (transactionIds: string[]) => void): () => void
  /** `fn` runs after each commit that changed the wallet's keys or its allowlist entry. */
  onKeys(wallet: string, fn: () => void): () => void
  /** Callbacks registered now, all kinds (the leak check of the tests and a metric). */
  readonly listeners: number
  /** Removes every callback and stops listening. */
  close(): void
}

class Registry<A extends unknown[]> {
  readonly #byKey = new Map<string, Set<(...args: A) => void>>()
  size = 0
  add(key: string, fn: (...args: A) => void): () => void {
    let set = this.#byKey.get(key)
    if (!set) this.#byKey.set(key, (set = new Set()))
    // Each registration is its own entry (a function registered twice is removed twice).
    const entry = (...args: A) => fn(...args)
    set.add(entry)
    this.size++
    let removed = false
    return () => {
      if (removed) return
      removed = true
      if (set.delete(entry)) this.size--
      if (set.size === 0 && this.#byKey.get(key) === set) this.#byKey.delete(key)
    }
  }
  emit(key: string, ...args: A): void {
    const set = this.#byKey.get(key)
    if (set) for (const fn of [...set]) safely(() => fn(...args))
  }
  emitAll(...args: A): void {
    for (const set of [...this.#byKey.values()]) for (const fn of [...set]) safely(() => fn(...args))
  }
  clear(): void {
    this.#byKey.clear()
    this.size = 0
  }
}

/** One subscriber's failure must not keep the others from hearing. */
function safely(fn: () => void): void {
  try {
    fn()
  } catch {
    // The subscriber's own stream reports its errors.
  }
}

export function createLiveHub(feed: Pick<ChangeFeed, 'on' | 'onLive'>): LiveHub {
  const vaults = new Registry<[]>()
  const wallets = new Registry<[string[]]>()
  const keys = new Registry<[]>()

  const offData = feed.on(DATA_CHANGED_CHANNEL, (payload) => {
    if (vaults.size + wallets.size === 0) return
    const change = parseAnnouncement(payload)
    if (change.all) vaults.emitAll()
    else for (const id of change.vaults) vaults.emit(id)
    for (const [address, ids] of change.wallets) wallets.emit(address, ids)
  })
  const offKeys = feed.on(KEY_CHANNEL, (payload) => {
    if (keys.size > 0) keys.emit(parseKeyNotification(payload).wallet)
  })
  // Notifications sent while the connection was down are lost: when it is back, vault and key
  // subscribers read again (their events carry the current state). Transactions written
  // meanwhile cannot be named; the wallet's history has them.
  let wasLive: boolean | undefined
  const offLive = feed.onLive((live) => {
    if (live && wasLive === false) {
      vaults.emitAll()
      keys.emitAll()
    }
    wasLive = live
  })

  return {
    onVault: (id, fn) => vaults.add(id, fn),
    onWallet: (address, fn) => wallets.add(address, fn),
    onKeys: (wallet, fn) => keys.add(wallet, fn),
    get listeners() {
      return vaults.size + wallets.size + keys.size
    },
    close() {
      offData()
      offKeys()
      offLive()
      vaults.clear()
      wallets.clear()
      keys.clear()
    },
  }
}
