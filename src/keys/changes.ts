import type { Prisma } from '../generated/prisma/client.js'

/** PostgreSQL channel on which every commit that revokes keys (or changes the allowlist) names the wallet. */
export const KEY_CHANNEL = 'vaultgate_api_keys'

type Listener = (wallet: string) => void
const listeners = new Set<Listener>()

/** Subscribes to key changes committed by this process; returns the unsubscribe function. */
export function onWalletKeysChanged(fn: Listener): () => void {
  listeners.add(fn)
  return () => listeners.delete(fn)
}

/** Tells this process' verifiers, after the commit, that a wallet's keys or allowlist entry changed. */
export function walletKeysChanged(wallet: string): void {
  for (const fn of listeners) fn(wallet)
}

/** Queues a NOTIFY inside the transaction: PostgreSQL delivers it to other instances at commit, and never on rollback. */
export async function notifyKeysChanged(tx: Prisma.TransactionClient, wallet: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_notify(${KEY_CHANNEL}, ${wallet})`
}
