import type { Prisma } from '../generated/prisma/client.js'
import { prisma } from '../db/client.js'

// Writes to one wallet's keys are serialised twice over. In this process, a queue per wallet: a
// request waits its turn without holding a database connection (so 100 concurrent creates need
// one connection, not 100, and never hit a pool or transaction-start timeout). Across processes,
// a transaction-scoped advisory lock on the wallet. The partial unique index
// api_keys_one_active_per_wallet stays the last line of defence.

const queues = new Map<string, Promise<unknown>>()

function queued<T>(wallet: string, work: () => Promise<T>): Promise<T> {
  const previous = queues.get(wallet) ?? Promise.resolve()
  const run = previous.then(work, work)
  const tail = run.catch(() => {})
  queues.set(wallet, tail)
  void tail.then(() => {
    if (queues.get(wallet) === tail) queues.delete(wallet)
  })
  return run
}

/** Namespace of our advisory locks (the first key of the two-key form), so other users of advisory locks cannot collide. */
const LOCK_CLASS = 0x76676b31 // "vgk1"

/** Runs `work` in a transaction that holds the wallet's lock, in this process and in the database. */
export function inWalletTransaction<T>(wallet: string, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return queued(wallet, () =>
    prisma.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int, hashtext(${wallet}))`
        return work(tx)
      },
      // Waiting for the advisory lock held by another instance counts against `timeout`.
      { maxWait: 10_000, timeout: 15_000 },
    ),
  )
}
