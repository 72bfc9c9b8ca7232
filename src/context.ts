import { randomUUID } from 'node:crypto'
import { createLoaders, type Loaders } from './loaders.js'

/** Request-scoped state only: the process-wide services (Prisma client, config) are modules. */
export interface Context {
  request: Request
  requestId: string
  /** Lazily built per request; never shared across requests. */
  readonly loaders: Loaders
  now: Date
}

/** The one context factory, used by GraphQL and the REST shim alike. */
export function createContext({ request, requestId, now }: { request: Request; requestId?: string; now?: Date }): Context {
  let loaders: Loaders | undefined
  return {
    request,
    requestId: requestId ?? request.headers.get('x-request-id') ?? randomUUID(),
    get loaders() {
      loaders ??= createLoaders()
      return loaders
    },
    now: now ?? new Date(),
  }
}
