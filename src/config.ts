import { z } from 'zod'
import { commaList } from './core/formats.js'
import { isEvmAddress } from './wallets/address.js'

/** Thrown at boot for invalid settings; the message names every bad variable, one per line. */
export class ConfigError extends Error {
  override name = 'ConfigError'
  /** One line per problem: `NAME: what is wrong`. */
  readonly problems: string[]
  constructor(problems: string[] | string) {
    const lines =
      typeof problems === 'string'
        ? problems
            .replace(/^Invalid configuration:\n/, '')
            .split('\n')
            .map((l) => l.trim())
        : problems
    super(`Invalid configuration:\n  ${lines.join('\n  ')}`)
    this.problems = lines
  }
}

const optionalBool = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v === '') return undefined
    const s = v.toLowerCase()
    if (['1', 'true', 'yes', 'on'].includes(s)) return true
    if (['0', 'false', 'no', 'off'].includes(s)) return false
    ctx.addIssue({ code: 'custom', message: 'must be true or false' })
    return z.NEVER
  })

const int = (fallback: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return fallback
      if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
        ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max}` })
        return z.NEVER
      }
      return Number(v)
    })

/** A bearer token the gateway checks (ADMIN_TOKEN, INTERNAL_TOKEN): long and not trivially guessable. */
const secret = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v))
  .refine(
    (v) => v === undefined || (v.length >= 32 && !/^(.)\1*$/s.test(v)),
    'must be at least 32 characters and not one character repeated (e.g. `openssl rand -hex 32`)',
  )

const url = (protocols: string[]) =>
  z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v))
    .refine(
      (v) => {
        if (v === undefined) return true
        try {
          return protocols.includes(new URL(v).protocol)
        } catch {
          return false
        }
      },
      `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`,
    )

/** Comma-separated browser origins (`https://app.example`), or `*` for any. */
const origins = (fallback: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const items = commaList(v ?? fallback)
      if (items.includes('*')) {
        if (items.length === 1) return '*' as const
        ctx.addIssue({ code: 'custom', message: '`*` cannot be combined with other origins' })
        return z.NEVER
      }
      const bad = items.filter((o) => {
        try {
          const u = new URL(o)
          return !['http:', 'https:'].includes(u.protocol) || u.origin !== o
        } catch {
          return true
        }
      })
      if (bad.length > 0) {
        ctx.addIssue({ code: 'custom', message: `not an origin (scheme://host[:port], no path): ${bad.join(', ')}` })
        return z.NEVER
      }
      return items
    })

/**
 * WEBHOOK_SECRET_KEY: keys of 32 bytes (64 hex digits or base64) sealing the webhook signing
 * secrets at rest, comma-separated during a rotation, the current one first.
 */
const secretKeys = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const keys = commaList(v)
    const parsed = keys.map((k) =>
      /^[0-9a-f]{64}$/i.test(k) ? Buffer.from(k, 'hex') : /^[A-Za-z0-9+/_-]{43}=?$/.test(k) ? Buffer.from(k, 'base64') : undefined,
    )
    if (parsed.some((b) => b?.length !== 32)) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be 32 bytes, written as 64 hex digits or as base64 (e.g. `openssl rand -base64 32`); several comma-separated during a rotation',
      })
      return z.NEVER
    }
    return parsed as Buffer[]
  })

const env = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test'], { error: 'must be development, production or test' }).default('development'),
  PORT: int(4000, 0, 65535),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./.data'),
  DATABASE_URL: url(['postgres:', 'postgresql:']),
  // Read replicas (docs/operations.md "Read replicas"; decisions §16).
  DATABASE_REPLICA_URLS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const urls = commaList(v)
      const bad = urls.filter((u) => {
        try {
          return !['postgres:', 'postgresql:'].includes(new URL(u).protocol)
        } catch {
          return true
        }
      })
      if (bad.length > 0) {
        // Only the position: a URL may carry a password.
        ctx.addIssue({
          code: 'custom',
          message: `must be comma-separated URLs starting with postgres:// or postgresql:// (item ${urls.indexOf(bad[0]!) + 1} is not)`,
        })
        return z.NEVER
      }
      return urls
    }),
  REPLICA_MAX_LAG_MS: int(5000, 100, 3_600_000),
  REPLICA_TIMEOUT_MS: int(2000, 100, 600_000),
  SEED_DEMO: optionalBool,
  ADMIN_TOKEN: secret,
  INTERNAL_TOKEN: secret,
  AUTH_JWKS_URL: url(['https:', 'http:']),
  AUTH_JWKS_FILE: z.string().min(1).optional(),
  AUTH_ISSUER: z.string().min(1).optional(),
  AUTH_AUDIENCE: z.string().min(1).optional(),
  AUTH_MAX_TOKEN_AGE_S: int(86_400, 0, 31_536_000),
  AUTH_REQUIRED_SCOPE: z
    .string()
    .optional()
    .transform((v) => (v ?? '').split(/[\s,]+/).filter(Boolean)),
  ALLOWLIST: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const items = commaList(v)
      const bad = items.filter((a) => !isEvmAddress(a))
      if (bad.length > 0) {
        ctx.addIssue({ code: 'custom', message: `not an EVM address (0x + 40 hex digits): ${bad.join(', ')}` })
        return z.NEVER
      }
      return [...new Set(items.map((a) => a.toLowerCase()))]
    }),
  REDIS_URL: url(['redis:', 'rediss:']),
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[\x21-\x7e]{1,100}$/, 'must be 1 to 100 printable characters without spaces')
    .default('vaultgate:rl'),
  METRICS_TOKEN: secret,
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'must be one of fatal, error, warn, info, debug, trace, silent' })
    .default('info'),
  DB_POOL_MAX: int(10, 1, 1000),
  DB_CONNECT_TIMEOUT_MS: int(5000, 100, 600_000),
  DB_IDLE_TIMEOUT_MS: int(10_000, 0, 3_600_000),
  DB_STATEMENT_TIMEOUT_MS: int(5000, 0, 3_600_000),
  SHUTDOWN_TIMEOUT_MS: int(10_000, 0, 600_000),
  SHUTDOWN_DELAY_MS: int(-1, 0, 600_000), // -1: not set (the default depends on NODE_ENV)
  MIGRATE_ON_START: optionalBool,
  SLOW_QUERY_MS: int(200, 0, 3_600_000),
  DB_PREPARED_STATEMENTS: optionalBool,
  RESPONSE_CACHE_TTL_MS: int(5000, 0, 3_600_000),
  RESPONSE_CACHE_STALE_MS: int(5000, 0, 3_600_000),
  API_KEY_CACHE_TTL_MS: int(30_000, 0, 30_000),
  API_KEY_USAGE_FLUSH_MS: int(10_000, 100, 600_000),
  RESPONSE_CACHE_MAX_MB: int(64, 1, 65_536),
  // Performance history (docs/api/vaults.md "Performance history").
  SPIKE_PCT: int(50, 0, 1_000_000),
  // Freshness (decisions §10): data older than this is reported stale; 0 = never.
  STALE_AFTER_MS: int(3_600_000, 0, 31_536_000_000),
  // Memory (docs/performance.md "Memory").
  HEAP_GROWING_PERCENT: int(-1, 0, 1000), // -1: not set (the default depends on the storage mode)
  WASM_OPTIMIZE: optionalBool,
  EMBEDDED_SHARED_BUFFERS_MB: int(16, 1, 65_536),
  // Limits against abuse (docs/hardening.md).
  GRAPHIQL: optionalBool,
  GRAPHQL_INTROSPECTION: optionalBool,
  GRAPHQL_MAX_DEPTH: int(12, 1, 1000),
  GRAPHQL_MAX_ALIASES: int(15, 0, 10_000),
  GRAPHQL_MAX_COST: int(50_000, 1, 100_000_000),
  GRAPHQL_MAX_TOKENS: int(2000, 100, 1_000_000),
  GRAPHQL_MAX_DIRECTIVES: int(20, 0, 10_000),
  GRAPHQL_MAX_RESPONSE_BYTES: int(4 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  // Trusted documents (decisions §15, docs/graphql-clients.md).
  GRAPHQL_DOCUMENTS_FILE: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
  GRAPHQL_TRUSTED_ONLY: optionalBool,
  // Apollo Federation 2 subgraph (decisions §15, docs/graphql-clients.md "Federation").
  GRAPHQL_FEDERATION: optionalBool,
  REQUEST_BODY_LIMIT_BYTES: int(100 * 1024, 1024, 64 * 1024 * 1024),
  REQUEST_TIMEOUT_MS: int(15_000, 100, 600_000),
  COMPRESS_MIN_BYTES: int(8192, 0, 1024 * 1024 * 1024),
  RATE_LIMIT_PUBLIC_PER_MINUTE: int(600, 0, 10_000_000),
  RATE_LIMIT_KEYS_PER_MINUTE: int(30, 0, 10_000_000),
  RATE_LIMIT_VERIFY_PER_MINUTE: int(1200, 0, 10_000_000),
  RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: int(10, 0, 10_000_000),
  RATE_LIMIT_IPV6_PREFIX: int(64, 1, 128),
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const s = (v ?? '').trim().toLowerCase()
      if (['', '0', 'false', 'no', 'off'].includes(s)) return 0
      if (['true', 'yes', 'on'].includes(s)) return 1
      if (/^\d+$/.test(s) && Number(s) <= 10) return Number(s)
      ctx.addIssue({ code: 'custom', message: 'must be true, false or a number of proxy hops from 0 to 10' })
      return z.NEVER
    }),
  CORS_ORIGINS: origins('*'),
  CORS_KEY_ORIGINS: origins(''),
  // Webhooks (docs/push.md).
  WEBHOOK_SECRET_KEY: secretKeys,
  WEBHOOK_ALLOW_PRIVATE: optionalBool,
  WEBHOOK_WORKER: optionalBool,
  WEBHOOK_CONCURRENCY: int(4, 1, 256),
  WEBHOOK_POLL_MS: int(2000, 50, 600_000),
  // Subscriptions (docs/push.md).
  SUBSCRIPTIONS_MAX: int(10_000, 0, 1_000_000),
  SUBSCRIPTIONS_PER_IP: int(20, 0, 1_000_000),
  SUBSCRIPTION_HEARTBEAT_MS: int(15_000, 100, 600_000),
  // The chain source (docs/chain-source.md).
  VAULT_SOURCES_FILE: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
  CHAIN_MAX_CLOCK_SKEW_MS: int(900_000, 0, 31_536_000_000),
})

/** Every environment variable the configuration reads (.env.example and the deploy files are checked against it). */
export const configVariables: readonly string[] = Object.keys(env.shape)

/**
 * How long a SIGTERM'd gateway keeps serving with /readyz at 503, when SHUTDOWN_DELAY_MS is not
 * set: long enough in production for load balancers and Kubernetes endpoints to stop sending it
 * new requests (docs/operations.md "Deploy"), none elsewhere so a developer's stop is immediate.
 */
export const defaultShutdownDelayMs = (production: boolean) => (production ? 5000 : 0)

export interface Config {
  nodeEnv: 'development' | 'production' | 'test'
  production: boolean
  port: number
  host: string
  /** `embedded` = PGlite under dataDir; `postgres` = DATABASE_URL. */
  storage: { mode: 'embedded'; dataDir: string } | { mode: 'postgres'; url: string }
  /**
   * Streaming replicas of DATABASE_URL (src/db/replicas.ts): public and wallet reads go to them, round
   * robin, while one has replayed within `maxLagMs` of the primary; empty: every read on the primary.
   * `timeoutMs`: how long a replica may leave a connection attempt or a statement unanswered before
   * the statement is run on the primary instead (a partition, a hung server): below the request's
   * deadline, so the reader still gets its answer.
   */
  replicas: { urls: string[]; maxLagMs: number; timeoutMs: number }
  seedDemo: boolean
  adminToken: string | undefined
  internalToken: string | undefined
  auth: {
    jwksUrl: string | undefined
    jwksFile: string | undefined
    issuer: string | undefined
    audience: string | undefined
    /** Scopes the token's `scope` claim must all hold (e.g. Dynamic's `user:basic`); empty = no check. */
    requiredScopes: string[]
    /** Oldest `iat` accepted, in seconds (tokens must then carry `iat`, not in the future); 0 = no check. */
    maxTokenAgeS?: number
  }
  allowlist: string[]
  redisUrl: string | undefined
  /** The start of every key written to Redis: deployments sharing one Redis keep apart with different prefixes. */
  redisKeyPrefix: string
  /** With it, /metrics answers only `Authorization: Bearer <token>` (401 otherwise). */
  metricsToken: string | undefined
  logLevel: string
  /** `preparedStatements`: name each distinct statement so every pooled connection parses and plans it once. */
  pool: {
    max: number
    connectTimeoutMs: number
    idleTimeoutMs: number
    statementTimeoutMs: number
    preparedStatements?: boolean
    /**
     * How long the client waits for any answer to a statement before it drops the connection (a
     * network partition, where statement_timeout never arrives): a request's deadline plus the
     * connect timeout, so the request always answers first. Unset with DB_STATEMENT_TIMEOUT_MS=0.
     */
    queryTimeoutMs?: number
  }
  shutdownTimeoutMs: number
  /** After SIGTERM, how long to keep serving (with /readyz at 503) before closing the listener. */
  shutdownDelayMs: number
  /** Apply pending migrations at start; when false, start refuses a database with pending ones. */
  migrateOnStart: boolean
  /** SQL statements slower than this are logged (warn). */
  slowQueryMs: number
  /**
   * Public vault reads kept in memory; `ttlMs` 0 turns the cache off. For `staleMs` past its TTL an
   * entry is still answered while one background request refreshes it (0 = never).
   */
  responseCache: { ttlMs: number; staleMs: number; maxBytes: number }
  /** A share-price move above this percent from the previous snapshot is a spike, left out of APY windows; 0 = never (src/vaults/performance.ts). */
  spikePct: number
  /** /v1/status and GraphQL `meta` report `stale` when the newest data is older than this (0 = never; decisions §10). */
  staleAfterMs: number
  /** How long API-key state may be served from memory (spec: at most 30 s); 0 reads it every time. */
  apiKeyCacheTtlMs?: number
  /** How often verification counts and last-use times are written (src/keys/usage.ts); also the retention job's first run. */
  apiKeyUsageFlushMs: number
  /** V8's old-generation growing factor, in percent above what survived the last full GC; 0 = V8's own heuristic. */
  heapGrowingPercent: number
  /** Optimise WebAssembly (TurboFan); off = baseline code only, tens of MB less memory (src/core/runtime-flags.ts). */
  wasmOptimize: boolean
  /** PGlite's `shared_buffers`, resident from its start (PostgreSQL's default is 128 MB). */
  embeddedSharedBuffersMb: number
  graphql: {
    graphiql: boolean
    introspection: boolean
    /**
     * graphql-js' "Did you mean …?" in validation and variable errors: in development only, where
     * introspection is on (they would reveal schema that introspection hides).
     */
    suggestions: boolean
    maxDepth: number
    maxAliases: number
    maxCost: number
    maxTokens: number
    maxDirectives: number
    /** Bytes of one serialised /graphql answer (src/graphql/response-rules.ts). */
    maxResponseBytes: number
    /** GRAPHQL_DOCUMENTS_FILE: the trusted documents, `{ "sha256:<hex>": "<document>" }` (src/graphql/documents.ts). */
    documentsFile: string | undefined
    /** GRAPHQL_TRUSTED_ONLY: run only the documents of `documentsFile`; anything else is `persisted_query_only`. */
    trustedOnly: boolean
    /** GRAPHQL_FEDERATION: serve the Apollo Federation 2 subgraph schema (`_service`, `_entities`; src/graphql/schema/index.ts). */
    federation: boolean
  }
  /** Bytes of request body accepted on /graphql and /v1, and how long a request there may run. */
  requests: { bodyLimitBytes: number; timeoutMs: number }
  /** Answers of at least this many bytes are compressed (gzip/br) for clients that accept it; 0 = never (src/http/compression.ts). */
  compressMinBytes: number
  /**
   * Requests per minute: per client IP on public routes, per wallet on key management, per key on
   * verify, and wrong admin or internal bearer tokens per client IP; 0 = off.
   */
  rateLimits: { publicPerMinute: number; keysPerMinute: number; verifyPerMinute: number; bearerFailuresPerMinute?: number }
  /** Proxy hops in front of the gateway whose X-Forwarded-For entries are trusted (0 = use the socket address). */
  trustProxyHops: number
  /** Per-IP limits count an IPv6 client by its network of this many bits (src/core/client-address.ts). */
  ipv6Prefix: number
  /** Browser origins allowed by CORS: `public` for /graphql and the /v1 reads, `keys` for key management. */
  cors: { public: '*' | string[]; keys: '*' | string[] }
  webhooks: {
    /** AES-256-GCM keys sealing the signing secrets at rest, the current one first; empty = stored as written. */
    secretKeys: Buffer[]
    /** Endpoint URLs must be https (production). */
    requireHttps: boolean
    /** Deliver to loopback and private addresses too. */
    allowPrivate: boolean
    /** Run the delivery worker in this process. */
    worker: boolean
    /** Endpoints this instance delivers to at once. */
    concurrency: number
    /** The longest the worker sleeps without a notification (it also wakes on every NOTIFY). */
    pollMs: number
  }
  /** GraphQL subscriptions over SSE: open streams per instance and per client IP (0 = none), and the heartbeat comment's interval. */
  subscriptions: { max: number; perIp: number; heartbeatMs: number }
  /** The sources file (decisions §12): the chains and vaults to follow; unset = no chain source. */
  sourcesFile: string | undefined
  /** CHAIN_MAX_CLOCK_SKEW_MS: a block dated further ahead of the clock is refused (retried), never recorded. */
  chainMaxClockSkewMs: number
}

export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  // An empty setting (`NAME=` in an env file or a compose file) is an unset one, for every setting.
  const set = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== ''))
  const parsed = env.safeParse(set)
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${String(i.path[0] ?? '?')}: ${i.message}`))
  }
  const e = parsed.data
  const embedded = e.DATABASE_URL === undefined
  const graphiql = e.GRAPHIQL ?? e.NODE_ENV !== 'production'
  if (embedded && e.DATABASE_REPLICA_URLS.length > 0) {
    throw new ConfigError(['DATABASE_REPLICA_URLS: replicas need DATABASE_URL (the primary); the embedded database has none'])
  }
  // A read a replica leaves unanswered is run on the primary after REPLICA_TIMEOUT_MS: past the
  // request's deadline the client would get a 503 instead (src/db/replicas.ts).
  if (e.DATABASE_REPLICA_URLS.length > 0 && e.REPLICA_TIMEOUT_MS >= e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError([
      `REPLICA_TIMEOUT_MS: must be below REQUEST_TIMEOUT_MS (${e.REQUEST_TIMEOUT_MS}): a read a replica does not answer is run on the primary within the request's deadline`,
    ])
  }
  if (e.AUTH_JWKS_URL && e.AUTH_JWKS_FILE) {
    throw new ConfigError(['AUTH_JWKS_URL and AUTH_JWKS_FILE: set one of them, not both'])
  }
  // Trusted-only without documents would refuse every request.
  if (e.GRAPHQL_TRUSTED_ONLY && !e.GRAPHQL_DOCUMENTS_FILE) {
    throw new ConfigError(['GRAPHQL_TRUSTED_ONLY: needs GRAPHQL_DOCUMENTS_FILE (the documents it allows)'])
  }
  return {
    nodeEnv: e.NODE_ENV,
    production: e.NODE_ENV === 'production',
    port: e.PORT,
    host: e.HOST,
    storage: embedded ? { mode: 'embedded', dataDir: e.DATA_DIR } : { mode: 'postgres', url: e.DATABASE_URL! },
    replicas: { urls: e.DATABASE_REPLICA_URLS, maxLagMs: e.REPLICA_MAX_LAG_MS, timeoutMs: e.REPLICA_TIMEOUT_MS },
    seedDemo: e.SEED_DEMO ?? embedded,
    adminToken: e.ADMIN_TOKEN,
    internalToken: e.INTERNAL_TOKEN,
    auth: {
      jwksUrl: e.AUTH_JWKS_URL,
      jwksFile: e.AUTH_JWKS_FILE,
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      requiredScopes: e.AUTH_REQUIRED_SCOPE,
      maxTokenAgeS: e.AUTH_MAX_TOKEN_AGE_S,
    },
    allowlist: e.ALLOWLIST,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    metricsToken: e.METRICS_TOKEN,
    logLevel: e.LOG_LEVEL,
    pool: {
      max: e.DB_POOL_MAX,
      connectTimeoutMs: e.DB_CONNECT_TIMEOUT_MS,
      idleTimeoutMs: e.DB_IDLE_TIMEOUT_MS,
      statementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
      preparedStatements: e.DB_PREPARED_STATEMENTS ?? true,
      queryTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS ? Math.max(e.DB_STATEMENT_TIMEOUT_MS, e.REQUEST_TIMEOUT_MS) + e.DB_CONNECT_TIMEOUT_MS : undefined,
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    shutdownDelayMs: e.SHUTDOWN_DELAY_MS >= 0 ? e.SHUTDOWN_DELAY_MS : defaultShutdownDelayMs(e.NODE_ENV === 'production'),
    migrateOnStart: e.MIGRATE_ON_START ?? true,
    slowQueryMs: e.SLOW_QUERY_MS,
    responseCache: { ttlMs: e.RESPONSE_CACHE_TTL_MS, staleMs: e.RESPONSE_CACHE_STALE_MS, maxBytes: e.RESPONSE_CACHE_MAX_MB * 1024 * 1024 },
    spikePct: e.SPIKE_PCT,
    staleAfterMs: e.STALE_AFTER_MS,
    apiKeyCacheTtlMs: e.API_KEY_CACHE_TTL_MS,
    apiKeyUsageFlushMs: e.API_KEY_USAGE_FLUSH_MS,
    // Embedded, a bounded heap saves little (PGlite's memory dominates) and costs ~20% more CPU
    // per request (docs/performance.md "Memory"): V8's own heuristic there.
    heapGrowingPercent: e.HEAP_GROWING_PERCENT >= 0 ? e.HEAP_GROWING_PERCENT : embedded ? 0 : 100,
    // Embedded mode runs PostgreSQL itself as WebAssembly, on every query.
    wasmOptimize: e.WASM_OPTIMIZE ?? embedded,
    embeddedSharedBuffersMb: e.EMBEDDED_SHARED_BUFFERS_MB,
    graphql: {
      graphiql,
      // GraphiQL is built from the schema's introspection: turning it on turns introspection on too.
      introspection: e.GRAPHQL_INTROSPECTION ?? graphiql,
      // The test suite (NODE_ENV=test) asserts the error messages production clients get.
      suggestions: e.NODE_ENV === 'development' && (e.GRAPHQL_INTROSPECTION ?? graphiql),
      maxDepth: e.GRAPHQL_MAX_DEPTH,
      maxAliases: e.GRAPHQL_MAX_ALIASES,
      maxCost: e.GRAPHQL_MAX_COST,
      maxTokens: e.GRAPHQL_MAX_TOKENS,
      maxDirectives: e.GRAPHQL_MAX_DIRECTIVES,
      maxResponseBytes: e.GRAPHQL_MAX_RESPONSE_BYTES,
      documentsFile: e.GRAPHQL_DOCUMENTS_FILE,
      trustedOnly: e.GRAPHQL_TRUSTED_ONLY ?? false,
      federation: e.GRAPHQL_FEDERATION ?? false,
    },
    requests: { bodyLimitBytes: e.REQUEST_BODY_LIMIT_BYTES, timeoutMs: e.REQUEST_TIMEOUT_MS },
    compressMinBytes: e.COMPRESS_MIN_BYTES,
    rateLimits: {
      publicPerMinute: e.RATE_LIMIT_PUBLIC_PER_MINUTE,
      keysPerMinute: e.RATE_LIMIT_KEYS_PER_MINUTE,
      verifyPerMinute: e.RATE_LIMIT_VERIFY_PER_MINUTE,
      bearerFailuresPerMinute: e.RATE_LIMIT_BEARER_FAILURES_PER_MINUTE,
    },
    trustProxyHops: e.TRUST_PROXY,
    ipv6Prefix: e.RATE_LIMIT_IPV6_PREFIX,
    cors: { public: e.CORS_ORIGINS, keys: e.CORS_KEY_ORIGINS },
    webhooks: {
      secretKeys: e.WEBHOOK_SECRET_KEY,
      requireHttps: e.NODE_ENV === 'production',
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE ?? false,
      worker: e.WEBHOOK_WORKER ?? true,
      concurrency: e.WEBHOOK_CONCURRENCY,
      pollMs: e.WEBHOOK_POLL_MS,
    },
    subscriptions: { max: e.SUBSCRIPTIONS_MAX, perIp: e.SUBSCRIPTIONS_PER_IP, heartbeatMs: e.SUBSCRIPTION_HEARTBEAT_MS },
    sourcesFile: e.VAULT_SOURCES_FILE,
    chainMaxClockSkewMs: e.CHAIN_MAX_CLOCK_SKEW_MS,
  }
}
