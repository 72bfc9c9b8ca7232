import { randomUUID } from 'node:crypto'
import { requestSignal } from './http/limits.js'
import { createLoaders, type Loaders } from './loaders.js'

/** Request-scoped state only: the process-wide services (Prisma client, config) are modules. */
export interface Context {
  request: Request
  requestId: string
  /** Lazily built per request; never shared across requests. */
  readonly loaders: Loaders
  now: Date
  /** Aborts at the request's deadline or when its client goes away; pass it to slow work. */
  signal: AbortSignal
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
    signal: requestSignal(request),
  }
}
