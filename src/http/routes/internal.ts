import { Hono } from 'hono'
import type { Config } from '../../config.js'
import type { RateLimits } from '../../core/rate-limit.js'
import type { AppEnv } from '../env.js'
import { requireBearer } from '../middleware/bearer.js'

/**
 * Service-to-service routes for the order exchange, behind `Authorization: Bearer $INTERNAL_TOKEN`;
 * absent (404) when INTERNAL_TOKEN is unset. `limits`: wrong tokens are counted per client IP. The
 * one route, POST /v1/apiKey/verify, is a step of the request pipeline of its own
 * (src/http/pipeline/verify.ts, under the same rule); any other path here is refused by this rule
 * first, then not found.
 */
export function internalRoutes(config: Pick<Config, 'internalToken' | 'trustProxyHops' | 'ipv6Prefix'>, limits?: RateLimits) {
  const app = new Hono<AppEnv>()
  app.use('*', requireBearer(config.internalToken, 'INTERNAL_TOKEN', 'Internal', limits && { limits, who: config, bucket: 'internal_token' }))
  return app
}
