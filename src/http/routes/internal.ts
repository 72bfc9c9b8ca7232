import { Hono } from 'hono'
import type { Config } from '../../config.js'
import { AppError, badRequest } from '../../core/errors.js'
import { VerifierUnavailableError, type ApiKeyVerifier } from '../../keys/verifier.js'
import { logger } from '../../core/log.js'
import { keyVerifications } from '../../core/metrics.js'
import { bearerMatches } from '../middleware/bearer.js'
import { smallBodyLimit } from '../middleware/body-limit.js'
import type { AppEnv } from '../env.js'
import { consumeOnce, type RateLimits } from '../../core/rate-limit.js'

/** The largest verify body read (a key is ~60 characters). */
export const VERIFY_BODY_LIMIT = 4096

/**
 * Service-to-service routes for the order exchange, behind `Authorization: Bearer $INTERNAL_TOKEN`;
 * absent (404) when INTERNAL_TOKEN is unset.
 */
export function internalRoutes(config: Pick<Config, 'internalToken'>, verifier: ApiKeyVerifier, limits?: RateLimits) {
  const app = new Hono<AppEnv>()
  app.use('*', async (c, next) => {
    if (!config.internalToken) throw new AppError('not_found', 'Internal routes are disabled (INTERNAL_TOKEN is not set).')
    if (!internalAuthorized(config, c.req.header('authorization'))) {
      throw new AppError('unauthorized', 'A valid internal token is required (Authorization: Bearer <INTERNAL_TOKEN>).')
    }
    await next()
  })

  app.post(
    '/v1/apiKey/verify',
    smallBodyLimit({ maxSize: VERIFY_BODY_LIMIT, onError: () => { throw badRequest('The request body is larger than 4 KiB.') } }),
    async (c) => {
      c.header('Cache-Control', 'no-store')
      return c.body(await verifyAnswer(await c.req.text(), c.req.raw, verifier, limits), 200, { 'Content-Type': 'application/json' })
    },
  )
  return app
}

/** Whether `authorization` carries the internal token (internal routes are off without one). */
export const internalAuthorized = (config: Pick<Config, 'internalToken'>, authorization: string | null | undefined) =>
  !!config.internalToken && bearerMatches(authorization, config.internalToken)

/**
 * The verify route's JSON answer to the body `text` (the fast path calls it too); throws the
 * AppError the route answers with.
 */
export async function verifyAnswer(text: string, request: Request, verifier: ApiKeyVerifier, limits?: RateLimits): Promise<string> {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw badRequest('The request body must be JSON: {"apiKey":"…"}.')
  }
  const apiKey = (body as { apiKey?: unknown } | null)?.apiKey
  if (typeof apiKey !== 'string' || apiKey === '') throw badRequest('apiKey must be a non-empty string.')
  // Per key (RATE_LIMIT_VERIFY_PER_MINUTE): one key hammered cannot starve the others.
  if (limits) await consumeOnce(limits, request, 'verify', apiKey)
  try {
    const data = await verifier.verify(apiKey)
    keyVerifications.inc({ result: data.active ? 'active' : (data.reason ?? 'unknown') })
    return JSON.stringify({ status: 'ok', data, server_time_ms: Date.now() })
  } catch (e) {
    if (!(e instanceof VerifierUnavailableError)) throw e
    keyVerifications.inc({ result: 'unavailable' })
    // Fail closed: the exchange must refuse the key, and must not take it for an unknown one.
    logger.error({ err: e.cause }, 'API key verification unavailable')
    throw new AppError('unavailable', 'API key state cannot be checked right now; refuse the key and retry shortly.')
  }
}
