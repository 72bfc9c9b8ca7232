import type { Config } from '../config.js'
import { AppError, badRequest } from '../core/errors.js'
import { logger } from '../core/log.js'
import { keyVerifications } from '../core/metrics.js'
import { VerifierUnavailableError, type ApiKeyVerifier } from '../keys/verifier.js'
import { bearerMatches } from './middleware/bearer.js'

// POST /internal/v1/apiKey/verify, the order exchange's question "is this key good?": answered by
// the early answers (src/http/early-answers.ts) when the request is plain, by the internal route
// (src/http/routes/internal.ts) otherwise, with this one function.

/** The largest verify body read (a key is ~60 characters). */
export const VERIFY_BODY_LIMIT = 4096

/** Whether `authorization` carries the internal token (internal routes are off without one). */
export const internalAuthorized = (config: Pick<Config, 'internalToken'>, authorization: string | null | undefined) =>
  !!config.internalToken && bearerMatches(authorization, config.internalToken)

/**
 * The verify answer's JSON for the body `text`; throws the AppError the route answers with.
 * `count`: counts the key against RATE_LIMIT_VERIFY_PER_MINUTE (rejects over it).
 */
export async function verifyAnswer(text: string, verifier: ApiKeyVerifier, count?: (apiKey: string) => Promise<void>): Promise<string> {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw badRequest('The request body must be JSON: {"apiKey":"…"}.')
  }
  const apiKey = (body as { apiKey?: unknown } | null)?.apiKey
  if (typeof apiKey !== 'string') throw badRequest('apiKey must be a string.')
  // Per key (RATE_LIMIT_VERIFY_PER_MINUTE): one key hammered cannot starve the others.
  if (count) await count(apiKey)
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
