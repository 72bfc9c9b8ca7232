import { randomUUID } from 'node:crypto'

/** PostgreSQL channel on which every commit that revokes keys (or changes the allowlist) names the wallet. */
export const KEY_CHANNEL = 'vaultgate_api_keys'

/** Names this process in notifications, so it can skip its own (it already invalidated at commit). */
export const PROCESS_ORIGIN = randomUUID()

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

/** The wallet and origin of a notification payload. */
export function parseKeyNotification(payload: string): { wallet: string; origin: string | undefined } {
  const [wallet = '', origin] = payload.split(' ')
  return { wallet, origin }
}
