import type { Clock } from '../core/clock.js'
import type { Db } from '../db/client.js'
import { findActiveKey, keyHistoryPage, type KeyHistoryRow } from '../keys/store.js'
import { transactionsByIds, type TransactionRow } from '../wallets/store.js'
import type { LiveHub } from './hub.js'

// The event sources behind the GraphQL subscriptions (src/graphql/schema/subscription.ts). Each is
// an async iterator written out by hand rather than an async generator: a generator waiting for
// its next event cannot be stopped (its return() queues behind the await), and a subscriber who
// disconnects must leave nothing registered. Here return() unregisters at once and ends a pending
// next(). Bursts are coalesced (a vault changed five times while its subscriber was busy is read
// once), so what a slow subscriber holds stays bounded by what changed, not by how often.

export interface LiveStream<T> extends AsyncIterableIterator<T> {
  readonly closed: boolean
}

/**
 * An iterator fed by `start(push, end)`, which registers whatever produces values and returns the
 * function that unregisters it (called once: on return(), throw() or end()). With `merge`, a value
 * pushed while the previous one still waits is merged into it (coalescing).
 */
export function pushStream<T>(start: (push: (value: T) => void, end: () => void) => () => void, merge?: (waiting: T, next: T) => T): LiveStream<T> {
  const queue: T[] = []
  let waiting: ((r: IteratorResult<T>) => void) | undefined
  let closed = false
  let stop: (() => void) | undefined
  const finish = (): Promise<IteratorResult<T>> => {
    if (!closed) {
      closed = true
      queue.length = 0
      const s = stop
      stop = undefined
      s?.()
      const w = waiting
      waiting = undefined
      w?.({ done: true, value: undefined })
    }
    return Promise.resolve({ done: true, value: undefined })
  }
  const push = (value: T) => {
    if (closed) return
    if (waiting) {
      const w = waiting
      waiting = undefined
      w({ done: false, value })
    } else if (merge && queue.length > 0) queue[queue.length - 1] = merge(queue[queue.length - 1]!, value)
    else queue.push(value)
  }
  const stream: LiveStream<T> = {
    get closed() {
      return closed
    },
    next() {
      if (queue.length > 0) return Promise.resolve({ done: false, value: queue.shift()! })
      if (closed) return Promise.resolve({ done: true, value: undefined })
      return new Promise((resolve) => {
        waiting = resolve
      })
    },
    return: finish,
    throw: (e?: unknown) => finish().then(() => Promise.reject(e)),
    [Symbol.asyncIterator]() {
      return stream
    },
  }
  const unregister = start(push, () => void finish())
  if (closed) unregister()
  else stop = unregister
  return stream
}

/**
 * Runs `work` after each `trigger()`, one run at a time: triggers that arrive during a run make one
 * more run after it, not one each. trigger() resolves when the runs it caused are done.
 */
function coalesced(work: () => Promise<void>, onError: (e: unknown) => void): { trigger(): Promise<void> } {
  let running: Promise<void> | undefined
  let again = false
  const run = async () => {
    try {
      do {
        again = false
        await work()
      } while (again)
    } catch (e) {
      onError(e)
    } finally {
      running = undefined
    }
  }
  return {
    trigger() {
      if (running) again = true
      else running = run()
      return running
    },
  }
}

/** One value per commit that changed the vault; commits while the subscriber is busy make one value. */
export function vaultChanges(hub: LiveHub, id: string): LiveStream<true> {
  return pushStream<true>(
    (push) => hub.onVault(id, () => push(true)),
    () => true,
  )
}

/**
 * The wallet's transactions each commit added or updated (a status change), read after the
 * commit, oldest first.
 */
export function walletTransactions(db: Db, hub: LiveHub, address: string): LiveStream<TransactionRow> {
  return pushStream<TransactionRow>((push, end) => {
    let pending = new Set<string>()
    const reader = coalesced(
      async () => {
        const ids = [...pending]
        pending = new Set()
        for (const row of await transactionsByIds(db, address, ids)) push(row)
      },
      () => end(),
    )
    return hub.onWallet(address, (ids) => {
      for (const id of ids) pending.add(id)
      void reader.trigger()
    })
  })
}

/** A key history entry (src/keys/store.ts keyHistoryPage) as the subscription hands it on. */
export interface KeyChange {
  type: KeyHistoryRow['type']
  keyId: string
  keyPrefix: string
  at: Date
}

const after = (a: KeyHistoryRow, b: KeyHistoryRow | undefined): boolean => {
  if (!b) return true
  if (a.at.getTime() !== b.at.getTime()) return a.at.getTime() > b.at.getTime()
  if (a.seq !== b.seq) return BigInt(a.seq) > BigInt(b.seq)
  return a.key_id > b.key_id
}

/** setTimeout's longest delay (about 24.8 days; keys live 30): a longer wait is taken in steps. */
const MAX_TIMER_MS = 2_147_483_647

/**
 * The wallet's key history entries (created, revoked, replaced, disabled, expired) that appear
 * after the subscription began, oldest first: read again after each commit that changed its keys
 * (NOTIFY on the key channel) and when its active key expires (no commit says so: a timer).
 */
export async function keyChanges(db: Db, hub: LiveHub, wallet: string, clock: Clock): Promise<LiveStream<KeyChange>> {
  let first: Promise<void> | undefined
  const stream = pushStream<KeyChange>((push, end) => {
    let seen: KeyHistoryRow | undefined
    let started = false
    let timer: NodeJS.Timeout | undefined
    let stopped = false
    const reader = coalesced(
      async () => {
        const now = clock()
        const rows = await keyHistoryPage(db, wallet, now, null, 50)
        if (stopped) return
        if (started) {
          const fresh = rows.filter((r) => after(r, seen)).reverse()
          for (const r of fresh) push({ type: r.type, keyId: r.key_id, keyPrefix: r.key_prefix, at: r.at })
        }
        started = true
        if (rows[0] && after(rows[0], seen)) seen = rows[0]
        // The active key's expiry is an event no commit announces.
        const active = await findActiveKey(db, wallet, now)
        clearTimeout(timer)
        if (active && !stopped) {
          timer = setTimeout(() => void reader.trigger(), Math.min(MAX_TIMER_MS, active.expiresAt.getTime() - now.getTime() + 1))
          timer.unref()
        }
      },
      () => end(),
    )
    // Registered before the first read: a change committed meanwhile makes a second read.
    const off = hub.onKeys(wallet, () => void reader.trigger())
    first = reader.trigger()
    return () => {
      stopped = true
      clearTimeout(timer)
      off()
    }
  })
  // The subscription is established once the history it starts after is known.
  await first
  return stream
}
