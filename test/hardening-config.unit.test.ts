import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'

describe('hardening settings', () => {
  it('has safe defaults: GraphiQL and introspection only outside production, CORS closed for keys', () => {
    const dev = loadConfig({})
    expect(dev.graphql).toEqual({
      graphiql: true,
      introspection: true,
      maxDepth: 12,
      maxAliases: 15,
      maxCost: 50_000,
      maxTokens: 2000,
      maxDirectives: 20,
      maxResponseBytes: 4 * 1024 * 1024,
    })
    expect(dev.requests).toEqual({ bodyLimitBytes: 102_400, timeoutMs: 15_000 })
    expect(dev.rateLimits).toEqual({ publicPerMinute: 600, keysPerMinute: 30, verifyPerMinute: 1200 })
    expect(dev.trustProxyHops).toBe(0)
    expect(dev.cors).toEqual({ public: '*', keys: [] })
    const prod = loadConfig({ NODE_ENV: 'production' })
    expect(prod.graphql).toMatchObject({ graphiql: false, introspection: false })
  })

  it('turns GraphiQL on in production on request, and introspection with it unless told otherwise', () => {
    expect(loadConfig({ NODE_ENV: 'production', GRAPHIQL: 'true' }).graphql).toMatchObject({ graphiql: true, introspection: true })
    expect(loadConfig({ NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'on' }).graphql).toMatchObject({ graphiql: false, introspection: true })
    expect(loadConfig({ GRAPHQL_INTROSPECTION: 'false' }).graphql).toMatchObject({ graphiql: true, introspection: false })
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
    expect(loadConfig({ CORS_ORIGINS: '' }).cors.public).toEqual([])
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
