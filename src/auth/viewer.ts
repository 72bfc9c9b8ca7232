import { AppError } from '../core/errors.js'
import type { Db } from '../db/client.js'
import { countFailure, type RateLimits } from '../core/rate-limit.js'
import { notWhitelisted } from '../keys/service.js'
import { isAllowlisted } from '../keys/store.js'
import { bearerToken, unauthorized, type SessionAuth } from './session.js'
import { selectWallet, walletsFromClaims } from './wallets.js'

/** The caller of a key-management operation: an allowlisted wallet of a verified wallet session. */
export interface Viewer {
  wallet: string
}

/**
 * Authenticates a key-management request (spec §5, §7): the bearer token, then the wallet it acts
 * for (`X-Service-Wallet`), then the allowlist. With `failures`, a refused token is counted in the
 * client's wallet-session budget (`session_token`, RATE_LIMIT_BEARER_FAILURES_PER_MINUTE); past it
 * that client's refused tokens get 429. The token is verified first: a valid session is never
 * refused for anyone's wrong ones. Every door (hot path, REST, /graphql) comes through here.
 */
export async function resolveViewer(
  db: Db,
  request: Request,
  session: SessionAuth | undefined,
  failures?: { limits: RateLimits; client: string },
): Promise<Viewer> {
  if (!session) throw new AppError('unavailable', 'Key management is not configured on this server (AUTH_JWKS_URL or AUTH_JWKS_FILE).')
  const token = bearerToken(request.headers.get('authorization'))
  let claims: Awaited<ReturnType<SessionAuth['verify']>>
  try {
    if (!token) throw unauthorized()
    claims = await session.verify(token)
  } catch (e) {
    // Only a refusal counts: a JWKS outage (503 unavailable) is not the client's doing.
    if (failures && e instanceof AppError && e.code === 'unauthorized') await countFailure(failures.limits, 'session_token', failures.client)
    throw e
  }
  const wallet = selectWallet(walletsFromClaims(claims), request.headers.get('x-service-wallet'))
  if (!(await isAllowlisted(db, wallet))) throw notWhitelisted()
  return { wallet }
}
