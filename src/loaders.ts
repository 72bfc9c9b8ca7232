// Per-request DataLoaders for per-vault / per-address aggregates that Prisma's own batching
// (findUnique batching, relation loading) does not reach. Created fresh for every request.
import { createPositionLoader } from './queries/positions.js'

export interface Loaders {
  /** `user(address).position(vaultId)`: every position of one operation in one statement. */
  position: ReturnType<typeof createPositionLoader>
}

export function createLoaders(): Loaders {
  return {
    position: createPositionLoader(),
  }
}
