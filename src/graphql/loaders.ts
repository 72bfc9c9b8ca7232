import type { Db } from '../db/client.js'
import { vaultLoaders } from '../vaults/store.js'
import { createPositionLoader } from '../wallets/store.js'

// Per-request DataLoaders for per-vault / per-address aggregates that Prisma's own batching
// (findUnique batching, relation loading) does not reach. Created fresh for every request.
export type Loaders = ReturnType<typeof vaultLoaders> & {
  /** `user(address).position(vaultId)`: every position of one operation in one statement. */
  position: ReturnType<typeof createPositionLoader>
}

/** Settings the loaders' rules depend on (from the configuration). */
export interface LoaderSettings {
  /** SPIKE_PCT (src/vaults/performance.ts). */
  spikePct: number
}

export function createLoaders(db: Db, settings: LoaderSettings): Loaders {
  return { ...vaultLoaders(db, settings), position: createPositionLoader(db) }
}
