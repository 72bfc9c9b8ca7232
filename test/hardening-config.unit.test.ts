import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'

describe('hardening settings', () => {
  it('has safe defaults: GraphiQL and introspection only outside production, CORS closed for keys', () => {
    const dev = loadConfig({})
    expect(dev.graphql).toEqual({
      graphiql: true,
      introspection: true,
      suggestions: true,
      maxDepth: 12,
      maxAliases: 15,
      maxCost: 50_000,
      maxTokens: 2000,
      maxDirectives: 20,
      maxResponseBytes: 4 * 1024 * 1024,
      // Trusted documents (decisions §15): none, and any document runs.
      documentsFile: undefined,
      trustedOnly: false,
      // Not an Apollo Federation subgraph unless asked: the schema is schema.graphql's.
      federation: false,
    })
    expect(dev.requests).toEqual({ bodyLimitBytes: 102_400, timeoutMs: 15_000 })
    expect(dev.rateLimits).toEqual({ publicPerMinute: 600, keysPerMinute: 30, verifyPerMinute: 1200, bearerFailuresPerMinute: 10 })
    expect(dev.auth.maxTokenAgeS).toBe(86_400)
    expect(dev.trustProxyHops).toBe(0)
    expect(dev.cors).toEqual({ public: '*', keys: [] })
    const prod = loadConfig({ NODE_ENV: 'production' })
    expect(prod.graphql).toMatchObject({ graphiql: false, introspection: false, suggestions: false })
    expect(loadConfig({ NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'true' }).graphql.suggestions).toBe(false)
    expect(loadConfig({ GRAPHQL_INTROSPECTION: 'false' }).graphql.suggestions).toBe(false)
  })

  it('turns GraphiQL on in production on request, and introspection with it unless told otherwise', () => {
    expect(loadConfig({ NODE_ENV: 'production', GRAPHIQL: 'true' }).graphql).toMatchObject({ graphiql: true, introspection: true })
    expect(loadConfig({ NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'on' }).graphql).toMatchObject({ graphiql: false, introspection: true })
    expect(loadConfig({ GRAPHQL_INTROSPECTION: 'false' }).graphql).toMatchObject({ graphiql: true, introspection: false })
  })

  it('refuses an ADMIN_TOKEN or INTERNAL_TOKEN shorter than 32 characters or made of one character repeated', () => {
    const rule = 'must be at least 32 characters and not one character repeated (e.g. `openssl rand -hex 32`)'
    expect(() => loadConfig({ ADMIN_TOKEN: 'a'.repeat(31), INTERNAL_TOKEN: 'x'.repeat(64) })).toThrow(
      ['Invalid configuration:', `  ADMIN_TOKEN: ${rule}`, `  INTERNAL_TOKEN: ${rule}`].join('\n'),
    )
    expect(() => loadConfig({ ADMIN_TOKEN: 'admin-token-0123456789' })).toThrow(`ADMIN_TOKEN: ${rule}`)
    const ok = loadConfig({ ADMIN_TOKEN: '3f9c1e7a5b2d4086af1c9e3b7d5a2f40', INTERNAL_TOKEN: 'ab'.repeat(16) })
    expect([ok.adminToken?.length, ok.internalToken]).toEqual([32, 'ab'.repeat(16)])
  })

  it('reads AUTH_MAX_TOKEN_AGE_S and RATE_LIMIT_BEARER_FAILURES_PER_MINUTE', () => {
    const c = loadConfig({ AUTH_MAX_TOKEN_AGE_S: '3600', RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '0' })
    expect([c.auth.maxTokenAgeS, c.rateLimits.bearerFailuresPerMinute]).toEqual([3600, 0])
    expect(() => loadConfig({ AUTH_MAX_TOKEN_AGE_S: '-1' })).toThrow('AUTH_MAX_TOKEN_AGE_S: must be an integer from 0 to 31536000')
  })

  it('reads TRUST_PROXY as a boolean or a number of hops', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxyHops).toBe(1)
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxyHops).toBe(2)
    expect(loadConfig({ TRUST_PROXY: 'off' }).trustProxyHops).toBe(0)
  })

  it('reads origin lists', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:3000', CORS_KEY_ORIGINS: '*' }).cors).toEqual({
      public: ['https://a.example', 'http://localhost:3000'],
      keys: '*',
    })
    // Empty is unset: the default.
    expect(loadConfig({ CORS_ORIGINS: '' }).cors.public).toBe('*')
  })

  it('names every bad value', () => {
    expect(() =>
      loadConfig({
        GRAPHIQL: 'sometimes',
        GRAPHQL_MAX_DEPTH: '0',
        REQUEST_BODY_LIMIT_BYTES: '10',
        RATE_LIMIT_KEYS_PER_MINUTE: '-1',
        TRUST_PROXY: 'all',
        CORS_ORIGINS: 'https://a.example/path,ftp://b.example',
        CORS_KEY_ORIGINS: '*,https://a.example',
      }),
    ).toThrow(
      [
        'Invalid configuration:',
        '  GRAPHIQL: must be true or false',
        '  GRAPHQL_MAX_DEPTH: must be an integer from 1 to 1000',
        '  REQUEST_BODY_LIMIT_BYTES: must be an integer from 1024 to 67108864',
        '  RATE_LIMIT_KEYS_PER_MINUTE: must be an integer from 0 to 10000000',
        '  TRUST_PROXY: must be true, false or a number of proxy hops from 0 to 10',
        '  CORS_ORIGINS: not an origin (scheme://host[:port], no path): https://a.example/path, ftp://b.example',
        '  CORS_KEY_ORIGINS: `*` cannot be combined with other origins',
      ].join('\n'),
    )
  })
})
