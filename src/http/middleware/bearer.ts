import { createHash, timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { AppError } from '../../core/errors.js'
import { countFailure, type FailureBucket, type RateLimits } from '../../core/rate-limit.js'
import type { AppEnv } from '../env.js'
import { type ClientIdentityConfig, clientId } from './rate-limit.js'

const sha256 = (text: string) => createHash('sha256').update(text).digest()

// The configured tokens' digests (a process has one admin and one internal token; tests a few more).
const expectedDigests = new Map<string, Buffer>()

/** Constant-time comparison of a presented bearer token with the configured one. */
export function bearerMatches(header: string | undefined | null, expected: string): boolean {
  const match = /^Bearer[ ]+(.+)$/i.exec(header ?? '')
  if (!match?.[1]) return false
  let digest = expectedDigests.get(expected)
  if (!digest) {
    if (expectedDigests.size >= 64) expectedDigests.clear()
    digest = sha256(expected)
    expectedDigests.set(expected, digest)
  }
  return timingSafeEqual(sha256(match[1].trim()), digest)
}

/**
 * Routes behind `Authorization: Bearer <token>`: absent (404) while the token is not configured,
 * 401 for any other bearer. `name`: the setting, e.g. ADMIN_TOKEN. With `guard`, wrong tokens are
 * counted per client (RATE_LIMIT_BEARER_FAILURES_PER_MINUTE) in the route family's own budget
 * (`bucket`): past it that address gets 429 for the rest of the minute on its wrong tokens only.
 * The token is checked first: the right one is always served, whoever else shares the address
 * (a NAT, an SNAT gateway) and whatever they sent. The tokens are at least 32 characters
 * (src/config.ts): the budget keeps guessing noise cheap, it is not what makes guessing hopeless.
 */
export function requireBearer(
  token: string | undefined,
  name: string,
  what: string,
  guard?: { limits: RateLimits; who: ClientIdentityConfig; bucket: FailureBucket },
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await checkBearer(token, name, what, c.req.header('authorization'), guard && { ...guard, client: () => clientId(c, guard.who) })
    await next()
  }
}

/** requireBearer's rule for one request (the pipeline's own routes call it: src/http/pipeline/verify.ts). */
export async function checkBearer(
  token: string | undefined,
  name: string,
  what: string,
  authorization: string | undefined,
  guard?: { limits: RateLimits; bucket: FailureBucket; client: () => string },
): Promise<void> {
  if (!token) throw new AppError('not_found', `${what} routes are disabled (${name} is not set).`)
  if (!bearerMatches(authorization, token)) {
    if (guard) await countFailure(guard.limits, guard.bucket, guard.client())
    throw new AppError('unauthorized', `A valid ${what.toLowerCase()} token is required (Authorization: Bearer <${name}>).`)
  }
}
