import { compositionLoaders } from '../vaults/store.js'
import { createPositionLoader } from '../wallets/store.js'

// Per-request DataLoaders for per-vault / per-address aggregates that Prisma's own batching
// (findUnique batching, relation loading) does not reach. Created fresh for every request.
export type Loaders = ReturnType<typeof compositionLoaders> & {
  /** `user(address).position(vaultId)`: every position of one operation in one statement. */
  position: ReturnType<typeof createPositionLoader>
}

export function createLoaders(): Loaders {
  return { ...compositionLoaders(), position: createPositionLoader() }
}
