import type { Config } from '../config.js'
import { AppError, badRequest } from '../core/errors.js'
import { logger } from '../core/log.js'
import { keyVerifications } from '../core/metrics.js'
import { parseInput } from '../core/input.js'
import { VerifyApiKeyInput } from '../keys/inputs.js'
import { VerifierUnavailableError, type ApiKeyVerifier } from '../keys/verifier.js'
import { bearerMatches } from './middleware/bearer.js'

// POST /internal/v1/apiKey/verify, the order exchange's question "is this key good?": answered by
// the pipeline's verify step (src/http/pipeline/verify.ts) with this one function.

/** The largest verify body read (a key is ~60 characters). */
export const VERIFY_BODY_LIMIT = 4096

/** Whether `authorization` carries the internal token (internal routes are off without one). */
export const internalAuthorized = (config: Pick<Config, 'internalToken'>, authorization: string | null | undefined) =>
  !!config.internalToken && bearerMatches(authorization, config.internalToken)

/** An active key this close to its expiry is answered with a `Key-Expires-Soon` header (docs/keys.md). */
export const EXPIRES_SOON_MS = 3 * 24 * 60 * 60 * 1000

/**
 * The verify answer for the body `text`: its JSON and its own headers (`key-expires-soon: <ms
 * left>` for an active key in its last 3 days); throws the AppError the route answers with. The
 * verifier counts the key against RATE_LIMIT_VERIFY_PER_MINUTE first (its `limiter`: one key
 * hammered cannot starve the others) and refuses it over that.
 */
export async function verifyAnswer(text: string, verifier: ApiKeyVerifier): Promise<{ body: string; headers: Record<string, string> }> {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw badRequest('The request body must be JSON: {"apiKey":"…", "clientIp":"…"}.')
  }
  const { apiKey, clientIp } = parseInput(VerifyApiKeyInput, body)
  try {
    const data = await verifier.verify(apiKey, { clientIp: clientIp ?? undefined })
    keyVerifications.inc({ result: data.active ? 'active' : (data.reason ?? 'unknown') })
    const headers: Record<string, string> = data.active && data.expiresInMs! <= EXPIRES_SOON_MS ? { 'key-expires-soon': String(data.expiresInMs) } : {}
    return { body: JSON.stringify({ status: 'ok', data, server_time_ms: Date.now() }), headers }
  } catch (e) {
    if (!(e instanceof VerifierUnavailableError)) throw e
    keyVerifications.inc({ result: 'unavailable' })
    // Fail closed: the exchange must refuse the key, and must not take it for an unknown one.
    logger.error({ err: e.cause }, 'API key verification unavailable')
    throw new AppError('unavailable', 'API key state cannot be checked right now; refuse the key and retry shortly.')
  }
}
