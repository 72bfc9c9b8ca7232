import type { MiddlewareHandler } from 'hono'
import { cors } from 'hono/cors'
import type { Config } from '../config.js'
import { rateLimitFields, type RateLimitState } from '../core/rate-limit.js'
import type { AppEnv } from './env.js'

// The one response-header policy of the gateway: security headers, the content security policy,
// CORS, the client's RateLimit fields on successful public answers, and Data-As-Of on reads. These
// functions compute them; the request pipeline's `finish` (src/http/pipeline/finish.ts) is the one
// place that puts them on an answer.

/** The API answers JSON: nothing may be loaded, framed or submitted from it. */
const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/**
 * HTML pages: the bundled GraphiQL (development, or GRAPHIQL=true) is one HTML file with inline
 * scripts and styles that starts web workers from blob: URLs and talks only to this origin.
 */
export const HTML_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline' 'unsafe-eval' blob:",
  "worker-src 'self' blob:",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ')

/**
 * On every answer: nosniff, no framing, no referrer, same-origin isolation and HSTS (the set
 * Hono's secureHeaders() gives, written out so there is one list to read). A header a route set
 * itself wins (a static file's own nosniff, a page's own CSP).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=15552000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'DENY',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
}

const CORS = {
  allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
  // X-Service-Wallet: a wallet-session token holding several wallets names one (src/auth/wallets.ts).
  allowHeaders: ['Content-Type', 'Authorization', 'X-Request-Id', 'If-None-Match', 'X-GraphQL-CSRF', 'X-Service-Wallet'],
  exposeHeaders: ['ETag', 'Retry-After', 'X-Request-Id', 'RateLimit-Policy', 'RateLimit', 'Data-As-Of'],
  maxAge: 600,
}
const EXPOSE = CORS.exposeHeaders.join(',')

/** Key management over REST; over GraphQL the key fields are checked by origin (src/auth/key-guard.ts). */
export const isKeyPath = (path: string) => /^\/v1\/apiKey(\/|$)/.test(path)

/** Paths that answer browsers' cross-origin requests at all: the public API (and key management, to its own origins). */
const isCorsPath = (path: string) => path === '/graphql' || path.startsWith('/v1/')

type Allowed = '*' | string[]
const allows = (allowed: Allowed, origin: string) => allowed === '*' || allowed.includes(origin)

/**
 * CORS for an actual (non-preflight) request. Public reads (`/graphql`, `/v1` reads) follow
 * CORS_ORIGINS (default `*`: the data is public and no request carries cookies); key management
 * (`/v1/apiKey`) follows CORS_KEY_ORIGINS (default none). Credentials are never allowed. Admin and
 * internal routes get no CORS headers at all.
 */
function corsHeaders(cors: Config['cors'], path: string, origin: string | null, keyManagement: boolean): Record<string, string> {
  if (!isCorsPath(path)) return {}
  let allowed: Allowed = cors.public
  if (keyManagement) {
    if (origin === null || !allows(cors.keys, origin)) return {}
    allowed = cors.keys
  }
  const headers: Record<string, string> = { 'access-control-expose-headers': EXPOSE }
  if (allowed === '*') headers['access-control-allow-origin'] = '*'
  else {
    if (origin !== null && allowed.includes(origin)) headers['access-control-allow-origin'] = origin
    headers.vary = 'Origin'
  }
  return headers
}

/**
 * Every policy header of an answer to `path` (security, CSP by content type, CORS by path and
 * origin), lowercase names. Key management (`/v1/apiKey…`, or a /graphql operation selecting it:
 * `keyManagement`) is never stored by any cache and follows CORS_KEY_ORIGINS. Content-Type, other
 * caching and the request id are the route's own.
 */
export function policyHeaders(
  cors: Config['cors'],
  path: string,
  origin: string | null,
  contentType: string | null,
  keyManagement = isKeyPath(path),
): Record<string, string> {
  const html = (contentType ?? '').startsWith('text/html')
  const headers = { ...SECURITY_HEADERS, 'content-security-policy': html ? HTML_CSP : API_CSP, ...corsHeaders(cors, path, origin, keyManagement) }
  return keyManagement ? { ...headers, 'cache-control': 'no-store' } : headers
}

/**
 * The IETF RateLimit-Policy / RateLimit fields (lowercase names) of a successful answer counted
 * against the client's per-IP budget (`state`: where its counter stood after this request; null
 * when the limit is off). They are per client: added to each answer as it leaves, never stored
 * with a cached one (src/http/response-cache.ts keeps bodies and ETags only).
 */
export function rateLimitHeaders(state: RateLimitState | null | undefined, status: number): Record<string, string> {
  if (!state || status >= 400) return {}
  const fields = rateLimitFields(state)
  return { 'ratelimit-policy': fields['RateLimit-Policy'], ratelimit: fields.RateLimit }
}

/**
 * Data-As-Of (docs/spec/decisions.md §10) of a successful read (a REST `/v1` GET, a GraphQL query;
 * key management excepted): the newest data time of the vaults the answer read, or the gateway's
 * `data_as_of` when it read none (src/freshness/answer.ts: the rule, computed once the answer ran),
 * as the JSON bodies write times (RFC 3339, UTC, milliseconds). A cached answer keeps
 * the value it was computed with (src/http/response-cache.ts stores it with the body; imports
 * clear the cache). `dataAsOf`: undefined for an answer that is not a read, null while the gateway
 * holds no data at all (then there is no header either).
 */
export function dataAsOfHeaders(dataAsOf: string | null | undefined, status: number): Record<string, string> {
  return dataAsOf && status < 400 ? { 'data-as-of': dataAsOf } : {}
}

/**
 * `vary` with the names of `add` that it does not list yet (case-insensitively): a preflight's
 * `Vary: Origin` (hono/cors) and the policy's own must not make `Origin, Origin`.
 */
export function withVary(vary: string | null | undefined, add: string): string {
  if (!vary) return add
  const listed = new Set(vary.split(',').map((n) => n.trim().toLowerCase()))
  const missing = add
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n && !listed.has(n.toLowerCase()))
  return missing.length === 0 ? vary : `${vary}, ${missing.join(', ')}`
}

/** Answers CORS preflights (OPTIONS) on the public API and, for CORS_KEY_ORIGINS only, on key management. */
export function corsPreflight(config: Pick<Config, 'cors'>): MiddlewareHandler<AppEnv> {
  const forAllowed = (allowed: Allowed) =>
    cors({ ...CORS, credentials: false, origin: allowed === '*' ? '*' : (origin) => (allowed.includes(origin) ? origin : null) })
  const publicPreflight = forAllowed(config.cors.public)
  const keyPreflight = forAllowed(config.cors.keys)
  return async (c, next) => {
    if (c.req.method !== 'OPTIONS') return next()
    if (!isKeyPath(c.req.path)) return publicPreflight(c, next)
    const origin = c.req.header('origin')
    if (origin && allows(config.cors.keys, origin)) return keyPreflight(c, next)
    return next()
  }
}
