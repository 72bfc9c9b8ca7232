import { AppError } from '../core/errors.js'
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
 * for (`X-Service-Wallet`), then the allowlist.
 */
export async function resolveViewer(request: Request, session: SessionAuth | undefined): Promise<Viewer> {
  if (!session) throw new AppError('unavailable', 'Key management is not configured on this server (AUTH_JWKS_URL or AUTH_JWKS_FILE).')
  const token = bearerToken(request.headers.get('authorization'))
  if (!token) throw unauthorized()
  const claims = await session.verify(token)
  const wallet = selectWallet(walletsFromClaims(claims), request.headers.get('x-service-wallet'))
  if (!(await isAllowlisted(wallet))) throw notWhitelisted()
  return { wallet }
}
