import type { Config } from '../../config.js'
import { AppError, badRequest } from '../../core/errors.js'
import type { RateLimits } from '../../core/rate-limit.js'
import type { ApiKeyVerifier } from '../../keys/verifier.js'
import { checkBearer } from '../middleware/bearer.js'
import { VERIFY_BODY_LIMIT, verifyAnswer } from '../verify-key.js'
import type { Answer } from './answer.js'
import type { Exchange } from './exchange.js'
import { errorAnswer } from './finish.js'

// POST /internal/v1/apiKey/verify, the order exchange's question "is this key good?", asked all
// day: a step of the pipeline of its own (docs/keys.md). Behind `Authorization: Bearer
// $INTERNAL_TOKEN` (absent, 404, while it is unset; wrong tokens counted per client IP in the
// internal family's budget), a body of at most 4 KiB, and an answer within the database's connect
// timeout whatever the verifier waits for.

export const VERIFY_PATH = '/internal/v1/apiKey/verify'

export function verifyStep({
  config,
  verifier,
  limits,
}: {
  config: Pick<Config, 'internalToken' | 'trustProxyHops' | 'ipv6Prefix' | 'pool'>
  verifier: ApiKeyVerifier
  limits: RateLimits
}): (x: Exchange) => Promise<Answer> {
  const withinMs = config.pool.connectTimeoutMs + 500
  return async (x) => {
    x.route = VERIFY_PATH
    await checkBearer(config.internalToken, 'INTERNAL_TOKEN', 'Internal', x.header('authorization'), {
      limits,
      bucket: 'internal_token',
      client: () => x.clientId(config),
    })
    x.bodyLimit = VERIFY_BODY_LIMIT
    const text: string = await x.text().catch((e: unknown) => {
      throw e instanceof AppError && e.code === 'bad_request' ? badRequest('The request body is larger than 4 KiB.') : e
    })
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AppError('unavailable', 'API key state cannot be checked right now; refuse the key and retry shortly.')), withinMs)
    })
    try {
      const { body, headers } = await Promise.race([verifyAnswer(text, verifier), late])
      return { status: 200, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }, body }
    } catch (e) {
      // A key's state is never stored by anyone, refusals included.
      const refused = errorAnswer(x, e)
      refused.headers['cache-control'] = 'no-store'
      return refused
    } finally {
      clearTimeout(timer)
    }
  }
}
