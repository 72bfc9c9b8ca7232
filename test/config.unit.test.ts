import { describe, expect, it } from 'vitest'
import { ConfigError, configVariables, loadConfig } from '../src/config.js'

describe('configuration', () => {
  it('defaults to the embedded database with demo data on port 4000', () => {
    const c = loadConfig({})
    expect(c.storage).toEqual({ mode: 'embedded', dataDir: './.data' })
    expect(c.seedDemo).toBe(true)
    expect(c.port).toBe(4000)
    expect(c.production).toBe(false)
  })

  it('uses PostgreSQL when DATABASE_URL is set, without demo data unless asked', () => {
    const c = loadConfig({ DATABASE_URL: 'postgresql://u@db:5432/vg', DB_POOL_MAX: '20' })
    expect(c.storage).toEqual({ mode: 'postgres', url: 'postgresql://u@db:5432/vg' })
    expect(c.seedDemo).toBe(false)
    expect(c.pool.max).toBe(20)
    expect(loadConfig({ DATABASE_URL: 'postgres://db/vg', SEED_DEMO: 'true' }).seedDemo).toBe(true)
  })

  it('reads DATABASE_REPLICA_URLS as a list of PostgreSQL URLs beside DATABASE_URL, never echoing a bad one (it may hold a password)', () => {
    const c = loadConfig({
      DATABASE_URL: 'postgresql://u@db:5432/vg',
      DATABASE_REPLICA_URLS: 'postgresql://u:pw@r1/vg, postgres://r2:5433/vg',
      REPLICA_MAX_LAG_MS: '2000',
      REPLICA_TIMEOUT_MS: '750',
    })
    expect(c.replicas).toEqual({ urls: ['postgresql://u:pw@r1/vg', 'postgres://r2:5433/vg'], maxLagMs: 2000, timeoutMs: 750 })
    expect(loadConfig({ DATABASE_URL: 'postgresql://db/vg' }).replicas).toEqual({ urls: [], maxLagMs: 5000, timeoutMs: 2000 })
    expect(() => loadConfig({ DATABASE_URL: 'postgresql://db/vg', DATABASE_REPLICA_URLS: 'postgresql://r1/vg,mysql://u:secret@r2/vg' })).toThrow(
      'Invalid configuration:\n  DATABASE_REPLICA_URLS: must be comma-separated URLs starting with postgres:// or postgresql:// (item 2 is not)',
    )
    expect(() => loadConfig({ DATABASE_REPLICA_URLS: 'postgresql://r1/vg' })).toThrow(
      'Invalid configuration:\n  DATABASE_REPLICA_URLS: replicas need DATABASE_URL (the primary); the embedded database has none',
    )
  })

  it('keeps REPLICA_TIMEOUT_MS below the request deadline when there are replicas (a read they leave unanswered must still be answered from the primary)', () => {
    const replicas = { DATABASE_URL: 'postgresql://db/vg', DATABASE_REPLICA_URLS: 'postgresql://r1/vg' }
    expect(() => loadConfig({ ...replicas, REPLICA_TIMEOUT_MS: '15000' })).toThrow(
      "Invalid configuration:\n  REPLICA_TIMEOUT_MS: must be below REQUEST_TIMEOUT_MS (15000): a read a replica does not answer is run on the primary within the request's deadline",
    )
    expect(() => loadConfig({ ...replicas, REPLICA_TIMEOUT_MS: '3000', REQUEST_TIMEOUT_MS: '2000' })).toThrow(
      'REPLICA_TIMEOUT_MS: must be below REQUEST_TIMEOUT_MS (2000)',
    )
    expect(loadConfig({ ...replicas, REPLICA_TIMEOUT_MS: '14999' }).replicas.timeoutMs).toBe(14_999)
    // Without replicas it is not used: no reason to refuse a short request deadline.
    expect(loadConfig({ REQUEST_TIMEOUT_MS: '1000' }).replicas.timeoutMs).toBe(2000)
    expect(() => loadConfig({ ...replicas, REPLICA_TIMEOUT_MS: '99' })).toThrow('REPLICA_TIMEOUT_MS')
  })

  it('normalises the ALLOWLIST to unique lowercase addresses', () => {
    const c = loadConfig({ ALLOWLIST: ' 0xABCDEF0000000000000000000000000000000001,0xabcdef0000000000000000000000000000000001 ,' })
    expect(c.allowlist).toEqual(['0xabcdef0000000000000000000000000000000001'])
  })

  it('names every bad value in one message', () => {
    const run = () => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', SEED_DEMO: 'maybe', ALLOWLIST: '0x12', ADMIN_TOKEN: 'short', NODE_ENV: 'prod' })
    expect(run).toThrow(ConfigError)
    expect(run).toThrow(
      [
        'Invalid configuration:',
        '  NODE_ENV: must be development, production or test',
        '  PORT: must be an integer from 0 to 65535',
        '  DATABASE_URL: must be a URL starting with postgres:// or postgresql://',
        '  SEED_DEMO: must be true or false',
        '  ADMIN_TOKEN: must be at least 32 characters and not one character repeated (e.g. `openssl rand -hex 32`)',
        '  ALLOWLIST: not an EVM address (0x + 40 hex digits): 0x12',
      ].join('\n'),
    )
  })

  it('migrates at start unless MIGRATE_ON_START is false', () => {
    expect(loadConfig({}).migrateOnStart).toBe(true)
    expect(loadConfig({ MIGRATE_ON_START: 'false' }).migrateOnStart).toBe(false)
    expect(() => loadConfig({ MIGRATE_ON_START: 'later' })).toThrow('MIGRATE_ON_START: must be true or false')
  })

  it('keeps serving 5 s after SIGTERM in production and stops at once elsewhere, unless SHUTDOWN_DELAY_MS says otherwise', () => {
    expect(loadConfig({}).shutdownDelayMs).toBe(0)
    expect(loadConfig({ NODE_ENV: 'production' }).shutdownDelayMs).toBe(5000)
    expect(loadConfig({ NODE_ENV: 'production', SHUTDOWN_DELAY_MS: '0' }).shutdownDelayMs).toBe(0)
    expect(loadConfig({ SHUTDOWN_DELAY_MS: '15000' }).shutdownDelayMs).toBe(15_000)
    expect(() => loadConfig({ SHUTDOWN_DELAY_MS: '-1' })).toThrow('SHUTDOWN_DELAY_MS: must be an integer from 0 to 600000')
  })

  it('refuses two JWKS sources at once', () => {
    expect(() => loadConfig({ AUTH_JWKS_URL: 'https://idp.example/jwks', AUTH_JWKS_FILE: './jwks.json' })).toThrow(
      'AUTH_JWKS_URL and AUTH_JWKS_FILE: set one of them, not both',
    )
  })

  it('reads the trusted documents settings, and refuses trusted-only without documents', () => {
    expect(loadConfig({}).graphql).toMatchObject({ documentsFile: undefined, trustedOnly: false })
    expect(loadConfig({ GRAPHQL_DOCUMENTS_FILE: './persisted-documents.json', GRAPHQL_TRUSTED_ONLY: 'true' }).graphql).toMatchObject({
      documentsFile: './persisted-documents.json',
      trustedOnly: true,
    })
    expect(() => loadConfig({ GRAPHQL_TRUSTED_ONLY: 'true' })).toThrow('GRAPHQL_TRUSTED_ONLY: needs GRAPHQL_DOCUMENTS_FILE (the documents it allows)')
    expect(() => loadConfig({ GRAPHQL_DOCUMENTS_FILE: 'x.json', GRAPHQL_TRUSTED_ONLY: 'maybe' })).toThrow('GRAPHQL_TRUSTED_ONLY: must be true or false')
  })

  it('serves the plain schema unless GRAPHQL_FEDERATION is true', () => {
    expect(loadConfig({}).graphql.federation).toBe(false)
    expect(loadConfig({ GRAPHQL_FEDERATION: 'true' }).graphql.federation).toBe(true)
    expect(() => loadConfig({ GRAPHQL_FEDERATION: 'yes please' })).toThrow('GRAPHQL_FEDERATION: must be true or false')
  })

  it('reads an empty setting as an unset one, for every setting', () => {
    const empty = Object.fromEntries(configVariables.map((name) => [name, '']))
    expect(loadConfig(empty)).toEqual(loadConfig({}))
    expect(loadConfig({ AUTH_JWKS_FILE: '', AUTH_ISSUER: '', AUTH_AUDIENCE: '' }).auth).toMatchObject({
      jwksFile: undefined,
      issuer: undefined,
      audience: undefined,
    })
    expect(loadConfig({ AUTH_JWKS_URL: 'https://idp.example/jwks', AUTH_JWKS_FILE: '' }).auth.jwksUrl).toBe('https://idp.example/jwks')
  })

  it('reads the identity and sharing settings: the IPv6 prefix of per-IP limits, the Redis key prefix, the metrics token', () => {
    expect(loadConfig({})).toMatchObject({ ipv6Prefix: 64, redisKeyPrefix: 'vaultgate:rl', metricsToken: undefined })
    const token = 'metrics-token-0123456789abcdef0123456789'
    expect(loadConfig({ RATE_LIMIT_IPV6_PREFIX: '56', REDIS_KEY_PREFIX: 'staging:rl', METRICS_TOKEN: token })).toMatchObject({
      ipv6Prefix: 56,
      redisKeyPrefix: 'staging:rl',
      metricsToken: token,
    })
    expect(() => loadConfig({ RATE_LIMIT_IPV6_PREFIX: '129', REDIS_KEY_PREFIX: 'has space', METRICS_TOKEN: 'short' })).toThrow(
      new ConfigError([
        'REDIS_KEY_PREFIX: must be 1 to 100 printable characters without spaces',
        'METRICS_TOKEN: must be at least 32 characters and not one character repeated (e.g. `openssl rand -hex 32`)',
        'RATE_LIMIT_IPV6_PREFIX: must be an integer from 1 to 128',
      ]),
    )
  })

  it('reads the webhook settings: sealing keys (hex or base64, comma-separated), private addresses, the worker', () => {
    expect(loadConfig({}).webhooks).toEqual({ secretKeys: [], requireHttps: false, allowPrivate: false, worker: true, concurrency: 4, pollMs: 2000 })
    const key = Buffer.alloc(32, 3)
    const c = loadConfig({
      NODE_ENV: 'production',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_SECRET_KEY: `${key.toString('hex')}, ${Buffer.alloc(32, 4).toString('base64')}`,
      WEBHOOK_WORKER: 'false',
      WEBHOOK_CONCURRENCY: '8',
      WEBHOOK_POLL_MS: '500',
    })
    expect(c.webhooks).toEqual({ secretKeys: [key, Buffer.alloc(32, 4)], requireHttps: true, allowPrivate: true, worker: false, concurrency: 8, pollMs: 500 })
  })

  it('follows the chains of VAULT_SOURCES_FILE when it is set, and none otherwise', () => {
    expect(loadConfig({}).sourcesFile).toBeUndefined()
    expect(loadConfig({ VAULT_SOURCES_FILE: '' }).sourcesFile).toBeUndefined()
    expect(loadConfig({ VAULT_SOURCES_FILE: './sources.json' }).sourcesFile).toBe('./sources.json')
  })

  it('refuses webhook settings it does not understand, naming each', () => {
    expect(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'sometimes', WEBHOOK_SECRET_KEY: 'short', WEBHOOK_CONCURRENCY: '0' })).toThrow(
      [
        'Invalid configuration:',
        '  WEBHOOK_SECRET_KEY: must be 32 bytes, written as 64 hex digits or as base64 (e.g. `openssl rand -base64 32`); several comma-separated during a rotation',
        '  WEBHOOK_ALLOW_PRIVATE: must be true or false',
        '  WEBHOOK_CONCURRENCY: must be an integer from 1 to 256',
      ].join('\n'),
    )
    // 31 bytes in hex is not a key either.
    expect(() => loadConfig({ WEBHOOK_SECRET_KEY: 'ab'.repeat(31) })).toThrow(/WEBHOOK_SECRET_KEY: must be 32 bytes/)
  })
})
