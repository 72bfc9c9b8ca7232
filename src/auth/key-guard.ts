import type { Config } from '../config.js'
import { AppError, quoted } from '../core/errors.js'
import type { RateLimits } from '../core/rate-limit.js'
import type { Viewer } from './viewer.js'

/** What the guard needs of a request context (src/graphql/context.ts). */
interface Guarded {
  request: Request
  viewer(): Promise<Viewer>
}

/**
 * Guards key management, REST and GraphQL alike (every key operation asks the context for its
 * caller, so this wraps `viewer()`):
 * - a browser page from an origin outside CORS_KEY_ORIGINS (other than the gateway's own, where
 *   GraphiQL runs) is refused before its token is even looked at: CORS alone would only hide the
 *   answer, not stop a mutation that a permissive CORS_ORIGINS lets through on /graphql;
 * - each key operation counts against its wallet's per-minute budget (RATE_LIMIT_KEYS_PER_MINUTE),
 *   so aliases in one GraphQL document count one by one.
 */
export function guardKeyManagement<C extends Guarded>(ctx: C, { limits, config }: { limits: RateLimits; config: Pick<Config, 'cors'> }): C {
  const viewer = ctx.viewer
  ctx.viewer = async () => {
    const origin = ctx.request.headers.get('origin')
    if (origin !== null && !originAllowed(origin, ctx.request, config.cors.keys)) {
      throw new AppError('unauthorized', `Key management is not allowed from the web origin ${quoted(origin)}.`)
    }
    const v = await viewer()
    await limits.consume('keys', v.wallet)
    return v
  }
  return ctx
}

function originAllowed(origin: string, request: Request, allowed: '*' | string[]): boolean {
  if (allowed === '*' || allowed.includes(origin)) return true
  try {
    return new URL(request.url).origin === origin
  } catch {
    return false
  }
}
