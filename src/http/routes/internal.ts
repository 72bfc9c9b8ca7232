import { Hono } from 'hono'
import type { Config } from '../../config.js'
import { badRequest } from '../../core/errors.js'
import type { RateLimits } from '../../core/rate-limit.js'
import type { ApiKeyVerifier } from '../../keys/verifier.js'
import type { AppEnv } from '../env.js'
import { smallBodyLimit } from '../middleware/body-limit.js'
import { requireBearer } from '../middleware/bearer.js'
import { VERIFY_BODY_LIMIT, verifyAnswer } from '../verify-key.js'

/**
 * Service-to-service routes for the order exchange, behind `Authorization: Bearer $INTERNAL_TOKEN`;
 * absent (404) when INTERNAL_TOKEN is unset. `limits`: wrong tokens are counted per client IP (the
 * per-key verification budget is the verifier's own `limiter`, src/app.ts).
 */
export function internalRoutes(config: Pick<Config, 'internalToken' | 'trustProxyHops' | 'ipv6Prefix'>, verifier: ApiKeyVerifier, limits?: RateLimits) {
  const app = new Hono<AppEnv>()
  app.use('*', requireBearer(config.internalToken, 'INTERNAL_TOKEN', 'Internal', limits && { limits, who: config, bucket: 'internal_token' }))

  app.post(
    '/v1/apiKey/verify',
    smallBodyLimit({
      maxSize: VERIFY_BODY_LIMIT,
      onError: () => {
        throw badRequest('The request body is larger than 4 KiB.')
      },
    }),
    async (c) => {
      c.header('Cache-Control', 'no-store')
      const { body, headers } = await verifyAnswer(await c.req.text(), verifier)
      return c.body(body, 200, { 'Content-Type': 'application/json', ...headers })
    },
  )
  return app
}
