import type { MiddlewareHandler } from 'hono'
import { cors } from 'hono/cors'
import { secureHeaders } from 'hono/secure-headers'
import type { Config } from '../config.js'
import type { AppEnv } from './env.js'

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

/** Security headers on every response: nosniff, no framing, no referrer (plus the CSP below). */
export const securityHeaders: MiddlewareHandler<AppEnv> = secureHeaders({
  contentSecurityPolicy: undefined,
  xFrameOptions: 'DENY',
  referrerPolicy: 'no-referrer',
  overwrite: false,
})

/** A CSP that allows nothing on JSON answers; HTML pages that set none get HTML_CSP. */
export const contentSecurityPolicy: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next()
  if (!c.res.headers.has('Content-Security-Policy')) {
    const html = (c.res.headers.get('content-type') ?? '').startsWith('text/html')
    c.res.headers.set('Content-Security-Policy', html ? HTML_CSP : API_CSP)
  }
}

/** Key management over REST; over GraphQL the key fields are checked by origin (useKeyOriginCheck). */
export const isKeyPath = (path: string) => /^\/v1\/apiKey(\/|$)/.test(path)

const allows = (allowed: '*' | string[], origin: string) => allowed === '*' || allowed.includes(origin)

/**
 * CORS. Public reads (`/graphql`, `/v1` reads) follow CORS_ORIGINS (default `*`: the data is public
 * and no request carries cookies). Key management (`/v1/apiKey`) follows CORS_KEY_ORIGINS (default
 * none: not even a preflight is answered). Credentials are never allowed. Admin and internal routes
 * get no CORS headers at all.
 */
export function corsFor(config: Pick<Config, 'cors'>): MiddlewareHandler<AppEnv> {
  const common = {
    allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
    allowHeaders: ['Content-Type', 'Authorization', 'X-Request-Id', 'If-None-Match', 'X-GraphQL-CSRF'],
    exposeHeaders: ['ETag', 'Retry-After', 'X-Request-Id'],
    maxAge: 600,
    credentials: false,
  }
  const forAllowed = (allowed: '*' | string[]): MiddlewareHandler<AppEnv> => {
    const preflight = cors({ ...common, origin: allowed === '*' ? '*' : (origin) => (allowed.includes(origin) ? origin : null) })
    const expose = common.exposeHeaders.join(',')
    // Actual requests get the same headers as hono/cors gives them, but set on the finished
    // response: hono/cors sets them on c.res before the handler runs, which makes Hono rebuild the
    // handler's response around a stream afterwards (it costs more than a cached read itself).
    return async (c, next) => {
      if (c.req.method === 'OPTIONS') return preflight(c, next)
      await next()
      const origin = c.req.header('origin') ?? ''
      const allowOrigin = allowed === '*' ? '*' : allowed.includes(origin) ? origin : null
      if (allowOrigin) c.res.headers.set('Access-Control-Allow-Origin', allowOrigin)
      c.res.headers.set('Access-Control-Expose-Headers', expose)
      if (allowed !== '*') c.res.headers.append('Vary', 'Origin')
    }
  }
  const publicCors = forAllowed(config.cors.public)
  const keyCors = forAllowed(config.cors.keys)
  return async (c, next) => {
    const origin = c.req.header('origin')
    if (!isKeyPath(c.req.path)) return publicCors(c, next)
    if (origin && allows(config.cors.keys, origin)) return keyCors(c, next)
    await next()
  }
}
