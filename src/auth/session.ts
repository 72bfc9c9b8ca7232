import { readFileSync, statSync } from 'node:fs'
import { createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import type { Clock } from '../core/clock.js'
import { ConfigError, type Config } from '../config.js'
import { AppError } from '../core/errors.js'
import { logger } from '../core/log.js'

/** Asymmetric JWS algorithms only: an HMAC "signed" with the public key must never verify. */
export const SESSION_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'EdDSA', 'Ed25519']

/** Longer bearer values are refused before parsing (real session tokens are 1–4 KB). */
export const MAX_TOKEN_LENGTH = 16 * 1024

/** Allowed clock skew between the identity provider and us, for `exp`, `nbf` and `iat`. */
export const CLOCK_TOLERANCE_S = 5

// One message for every way a token can be wrong: which check failed is for our logs, not the caller.
const UNAUTHORIZED = 'A valid wallet-session token is required (Authorization: Bearer <JWT>).'

export const unauthorized = () => new AppError('unauthorized', UNAUTHORIZED, { headers: { 'WWW-Authenticate': 'Bearer' } })

const jwksUnavailable = () => new AppError('unavailable', "The identity provider's signing keys cannot be fetched; try again shortly.")

/** A failure to obtain the key set itself (network, HTTP status, malformed JSON), as opposed to a bad token. */
class JwksFetchError extends Error {
  override name = 'JwksFetchError'
}

// Errors of the key lookup that are about the token (its `alg`/`kid` matches no usable key).
const TOKEN_KEY_ERRORS = new Set([errors.JWKSNoMatchingKey.code, errors.JWKSMultipleMatchingKeys.code, errors.JOSENotSupported.code])

function keyLookup(resolve: JWTVerifyGetKey): JWTVerifyGetKey {
  return async (header, token) => {
    try {
      return await resolve(header, token)
    } catch (e) {
      if (e instanceof errors.JOSEError && TOKEN_KEY_ERRORS.has(e.code)) throw e
      throw new JwksFetchError('JWKS unavailable', { cause: e })
    }
  }
}

function readJwksFile(file: string): JWTVerifyGetKey {
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, 'utf8'))
  } catch (e) {
    throw new ConfigError([`AUTH_JWKS_FILE: cannot read a JSON Web Key Set from ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`])
  }
  try {
    return createLocalJWKSet(json as JSONWebKeySet)
  } catch {
    throw new ConfigError([`AUTH_JWKS_FILE: ${file} is not a JSON Web Key Set ({"keys":[…]})`])
  }
}

/** Why AUTH_JWKS_FILE cannot serve as the key set, if it cannot (checked at boot, before anything is written). */
export function jwksFileProblem(file: string): string | undefined {
  try {
    readJwksFile(file)
    return undefined
  } catch (e) {
    if (e instanceof ConfigError) return e.problems[0]
    throw e
  }
}

/** The key set in AUTH_JWKS_FILE, read at boot and again when it changed and a token names a key it lacks (rotation). */
function fileKeys(file: string): JWTVerifyGetKey {
  let keys = readJwksFile(file)
  let mtime = statSync(file).mtimeMs
  return async (header, token) => {
    try {
      return await keys(header, token)
    } catch (e) {
      if (!(e instanceof errors.JWKSNoMatchingKey)) throw e
      const now = statSync(file, { throwIfNoEntry: false })?.mtimeMs
      if (now === undefined || now === mtime) throw e
      try {
        keys = readJwksFile(file)
        mtime = now
      } catch {
        throw new JwksFetchError('AUTH_JWKS_FILE became unreadable')
      }
      return keys(header, token)
    }
  }
}

/** `scope` as OAuth writes it (space-separated) or as an array; every required scope must be present. */
export function hasScopes(scope: unknown, required: string[]): boolean {
  if (required.length === 0) return true
  const held = typeof scope === 'string' ? scope.split(' ') : Array.isArray(scope) ? scope : []
  return required.every((s) => held.includes(s))
}

export interface SessionAuth {
  /** The verified claims of a bearer token; AppError `unauthorized` (401) or `unavailable` (503) otherwise. */
  verify(token: string): Promise<JWTPayload>
}

/** Verifies wallet-session JWTs (docs/spec/decisions.md §7); undefined when neither AUTH_JWKS_URL nor AUTH_JWKS_FILE is set. */
export function createSessionAuth(auth: Config['auth'], clock: Clock): SessionAuth | undefined {
  let resolve: JWTVerifyGetKey
  if (auth.jwksUrl) {
    // jose caches the set (10 min), refetches on an unknown `kid` at most every 30 s (cooldown), 5 s fetch timeout.
    resolve = createRemoteJWKSet(new URL(auth.jwksUrl))
  } else if (auth.jwksFile) {
    resolve = fileKeys(auth.jwksFile)
  } else {
    return undefined
  }
  const getKey = keyLookup(resolve)
  return {
    async verify(token) {
      if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) throw unauthorized()
      try {
        if (!canonicalParts(token)) throw new errors.JWSInvalid('non-canonical base64url')
        if (duplicateMembers(token)) throw new errors.JWTInvalid('duplicate JSON member names')
        const { payload } = await jwtVerify(token, getKey, {
          algorithms: SESSION_ALGORITHMS,
          requiredClaims: ['exp'],
          issuer: auth.issuer,
          audience: auth.audience,
          clockTolerance: CLOCK_TOLERANCE_S,
          currentDate: clock(),
          // With it jose requires `iat`, refuses one older than this and one in the future (past the tolerance).
          maxTokenAge: auth.maxTokenAgeS || undefined,
        })
        if (!hasScopes(payload.scope, auth.requiredScopes)) throw new errors.JWTClaimValidationFailed('missing scope', payload, 'scope', 'check_failed')
        return payload
      } catch (e) {
        if (e instanceof JwksFetchError) {
          logger.warn({ err: e.cause ?? e, jwks: auth.jwksUrl ?? auth.jwksFile }, 'wallet-session keys unavailable')
          throw jwksUnavailable()
        }
        logger.debug({ reason: e instanceof errors.JOSEError ? e.code : 'invalid' }, 'wallet-session token refused')
        throw unauthorized()
      }
    },
  }
}

/**
 * Whether every part of a compact JWS is canonical base64url: the text its bytes encode to, with
 * no padding, no other character and zero unused bits in its last character. jose (through
 * Node's decoder) ignores those bits, so `…Q` and `…R` at the end of a signature would be one
 * signature: a token with many spellings is a token an observer cannot recognise (a replay cache,
 * a revocation list keyed by token) — one spelling is accepted, the one that was signed.
 */
export function canonicalParts(token: string): boolean {
  return token.split('.').every((part) => Buffer.from(part, 'base64url').toString('base64url') === part)
}

/**
 * Whether a compact JWS's header or claims repeat a member name at any depth. jose reads them with
 * JSON.parse, which keeps the last of each: a token whose signer meant `"wallets":[A]` could read
 * as `[B]` to us and as `[A]` to another parser. Undecodable parts count as duplicates (jose would
 * refuse them anyway).
 */
export function duplicateMembers(token: string): boolean {
  const [header, claims] = token.split('.')
  try {
    return [header, claims].some((part) => part !== undefined && repeatsNames(Buffer.from(part, 'base64url').toString('utf8')))
  } catch {
    return true
  }
}

function repeatsNames(json: string): boolean {
  // One set of names per open object (null for an array), scanning strings by hand: names are the
  // strings an object holds where a member starts.
  const open: (Set<string> | null)[] = []
  let expectName = false
  for (let i = 0; i < json.length; i++) {
    const ch = json[i]
    if (ch === '"') {
      let end = i + 1
      while (end < json.length && json[end] !== '"') end += json[end] === '\\' ? 2 : 1
      const names = open.at(-1)
      if (names && expectName) {
        const name = JSON.parse(json.slice(i, end + 1)) as string
        if (names.has(name)) return true
        names.add(name)
        expectName = false
      }
      i = end
    } else if (ch === '{') {
      open.push(new Set())
      expectName = true
    } else if (ch === '[') {
      open.push(null)
      expectName = false
    } else if (ch === '}' || ch === ']') {
      open.pop()
      expectName = false
    } else if (ch === ',') {
      expectName = open.at(-1) instanceof Set
    }
  }
  return false
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | null | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '')
  return match?.[1]
}
