import { compositionLoaders } from './domain/composition.js'

// Per-request DataLoaders for per-vault / per-address aggregates that Prisma's own batching
// (findUnique batching, relation loading) does not reach. Created fresh for every request.
export type Loaders = ReturnType<typeof compositionLoaders>

export function createLoaders(): Loaders {
  return { ...compositionLoaders() }
}
