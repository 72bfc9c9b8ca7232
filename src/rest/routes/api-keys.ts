import { z } from 'zod'
import { EVM_ADDRESS } from '../../wallets/address.js'
import { parseInput } from '../../core/input.js'
import { PAGE_SIZE } from '../../core/page.js'
import { MAX_ALLOWED_CIDRS } from '../../keys/cidr.js'
import { KEY_PREFIX_PATTERN, RAW_KEY_PATTERN } from '../../keys/format.js'
import { KEY_HISTORY_TYPES } from '../../keys/history.js'
import { CreateApiKeyInput } from '../../keys/inputs.js'
import { parseUsageDays, USAGE_DEFAULT_DAYS, USAGE_RETENTION_DAYS, VERIFY_OUTCOMES } from '../../keys/usage.js'
import { limitParam, type Param } from '../params.js'
import { defineRoute, type ErrorDoc, type RestRoute } from '../route.js'
import { type CamelKeys, component, envelope, page, selectionOf, snakeKeys } from '../wire.js'

// Key management (spec §4): the spec's envelope around the GraphQL result; the record is camelCase
// on the wire as in spec §2. The shim's default Cache-Control (no-store) applies: the create
// response holds the raw key.

const UnixMs = z.int().min(0).meta({ description: 'Unix time in milliseconds.' })
const ApiKeyRecord = component(
  'ApiKey',
  z
    .object({
      id: z.uuid(),
      keyPrefix: z.string().regex(KEY_PREFIX_PATTERN),
      createdAtMs: UnixMs,
      expiresAtMs: UnixMs.meta({ description: '30 days after creation.' }),
      revokedAtMs: UnixMs.nullable().meta({ description: 'Null while the key is not revoked.' }),
      name: z.string().nullable().meta({ description: "The owner's label, or null." }),
      allowedCidrs: z
        .array(z.string())
        .max(MAX_ALLOWED_CIDRS)
        .meta({ description: 'The networks (canonical CIDR: network address, shortest form) a verification must come from; empty: any IP.' }),
      lastUsedAtMs: UnixMs.nullable().meta({
        description: 'A successful verification at most a minute older than the last one (written at most once a minute); null until the first.',
      }),
      expiresInMs: z.int().min(0).meta({ description: 'Milliseconds until expiry when the answer was made (0 once expired).' }),
    })
    .meta({ description: 'An API key for the order exchange, without its secret.' }),
)
const NewApiKey = component(
  'NewApiKey',
  ApiKeyRecord.extend({
    apiKey: z
      .string()
      .regex(RAW_KEY_PATTERN)
      .meta({ description: 'The raw key (prefix, "_", secret), shown this once and never again. Keep it in a server-side secret store.' }),
  }),
)

const KeyEvent = component(
  'ApiKeyEvent',
  z.object({
    type: z.enum(KEY_HISTORY_TYPES as [string, ...string[]]),
    keyId: z.uuid(),
    keyPrefix: z.string(),
    atMs: UnixMs.meta({ description: 'When it happened.' }),
  }),
)
const NextCursor = z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' })
const Counts = z.object(Object.fromEntries(VERIFY_OUTCOMES.map((o) => [o, z.int().min(0)])) as Record<(typeof VERIFY_OUTCOMES)[number], z.ZodInt>)
const Usage = component(
  'ApiKeyUsage',
  z.object({
    days: z.int().min(1).max(USAGE_RETENTION_DAYS),
    since: z.string().meta({ description: 'The first UTC date covered, YYYY-MM-DD (today is the last).' }),
    items: z
      .array(
        z.object({
          day: z.string().meta({ description: 'The UTC date, YYYY-MM-DD.' }),
          keyId: z.uuid(),
          keyPrefix: z.string(),
          name: z.string().nullable(),
          counts: Counts.meta({ description: 'Verifications by outcome: `active` (accepted), or why they were refused.' }),
          total: z.int().min(0),
        }),
      )
      .meta({ description: 'Newest day first, then newest key; days without verifications are left out.' }),
  }),
)
type Connection<N> = { edges: { node: N }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } }

type KeyRecord = z.infer<typeof ApiKeyRecord>
/** The record's GraphQL fields (camelCase on the wire too, spec §2). */
const RECORD = selectionOf(ApiKeyRecord)
const ok = <T>(data: T) => ({ status: 'ok' as const, data, server_time_ms: Date.now() })

// Spec §7: wallet_required is a 400 when the token holds several wallets and no X-Service-Wallet, a 403 when it holds none.
const errors: ErrorDoc[] = [
  'bad_request',
  'unauthorized',
  'not_whitelisted',
  { code: 'wallet_required', status: 400 },
  'wallet_required',
  'wallet_not_connected',
]

const session = {
  security: ['walletSession' as const],
  headers: {
    'X-Service-Wallet': {
      description: 'The wallet to act for: required when the session token holds several EVM wallets; must be one of them.',
      schema: { type: 'string', pattern: EVM_ADDRESS.source },
      parse: (text) => text,
    } satisfies Param,
  },
  errors,
  tags: ['API keys'],
  params: {},
  query: {},
}

export const apiKeyRoutes: RestRoute[] = [
  defineRoute({
    ...session,
    method: 'POST',
    path: '/apiKey',
    summary: 'Create an API key',
    description: "Creates the caller's API key; its previous key is revoked in the same transaction. The raw key is in this answer only.",
    body: component('CreateApiKeyRequest', CreateApiKeyInput),
    document: `mutation CreateApiKey($keyPrefix: String, $name: String, $allowedCidrs: [String!]) {
      createApiKey(keyPrefix: $keyPrefix, name: $name, allowedCidrs: $allowedCidrs) { ${RECORD} apiKey }
    }`,
    variables: ({ body }) => {
      const { keyPrefix, name, allowedCidrs } = parseInput(CreateApiKeyInput, body)
      return { keyPrefix: keyPrefix ?? null, name: name ?? null, allowedCidrs: allowedCidrs ?? null }
    },
    response: component('CreateApiKeyResponse', envelope(NewApiKey)),
    shape: (data: { createApiKey: KeyRecord & { apiKey: string } }) => ok(data.createApiKey),
  }),
  defineRoute({
    ...session,
    method: 'GET',
    path: '/apiKey',
    summary: "Inspect the caller's API key",
    description: 'The active key without its secret; `data` is null when there is none.',
    document: `query ApiKey { apiKey { ${RECORD} } }`,
    variables: () => ({}),
    response: component('ApiKeyResponse', envelope(ApiKeyRecord.nullable())),
    shape: (data: { apiKey: KeyRecord | null }) => ok(data.apiKey),
  }),
  defineRoute({
    ...session,
    method: 'DELETE',
    path: '/apiKey',
    summary: "Revoke the caller's API key",
    description: '`revoked` is true when an active key was revoked, false when there was none.',
    document: 'mutation RevokeApiKey { revokeApiKey { revoked } }',
    variables: () => ({}),
    response: component('RevokeApiKeyResponse', envelope(z.object({ revoked: z.boolean() }))),
    shape: (data: { revokeApiKey: { revoked: boolean } }) => ok(data.revokeApiKey),
  }),
  defineRoute({
    ...session,
    method: 'GET',
    path: '/apiKey/events',
    summary: "List the caller's key history",
    description:
      'Newest first, one page at a time: `created`, `revoked` (by its owner), `replaced` (by a newer key), `disabled` (the wallet left the allowlist), `expired` (dated when the key expired). A cursor we did not issue, or issued for another wallet, is a 400.',
    query: {
      limit: limitParam(PAGE_SIZE, 'Entries per page.'),
      cursor: { description: 'The `next_cursor` of the previous page.', schema: { type: 'string' }, parse: (text: string | undefined) => text } satisfies Param,
    },
    document: `query ApiKeyEvents($first: Int, $after: String) {
      apiKeyEvents(first: $first, after: $after) { edges { node { ${selectionOf(KeyEvent)} } } pageInfo { hasNextPage endCursor } }
    }`,
    variables: ({ query }) => ({ first: query.limit, after: query.cursor }),
    response: component('ApiKeyEventsResponse', envelope(component('ApiKeyEventPage', z.object({ items: z.array(KeyEvent), next_cursor: NextCursor })))),
    shape: (data: { apiKeyEvents: Connection<z.infer<typeof KeyEvent>> }) => ok(page(data.apiKeyEvents, (node) => node)),
  }),
  defineRoute({
    ...session,
    method: 'GET',
    path: '/apiKey/usage',
    summary: "Get the caller's key usage",
    description: `Verifications of the caller's keys per key and UTC day, by outcome, over the last \`days\` days (today included). Kept ${USAGE_RETENTION_DAYS} days; counts are written in batches, so the last few seconds may not show yet.`,
    query: {
      days: {
        description: `How many UTC days back, today included: 1 to ${USAGE_RETENTION_DAYS} (default ${USAGE_DEFAULT_DAYS}).`,
        schema: { type: 'integer', minimum: 1, maximum: USAGE_RETENTION_DAYS, default: USAGE_DEFAULT_DAYS },
        parse: parseUsageDays,
      } satisfies Param<number>,
    },
    document: `query ApiKeyUsage($days: Int) { apiKeyUsage(days: $days) { ${selectionOf(Usage)} } }`,
    variables: ({ query }) => ({ days: query.days }),
    response: component('ApiKeyUsageResponse', envelope(Usage)),
    // The counts are named by the verify answer's `reason` values (snake_case), the rest is camelCase like every key answer.
    shape: (data: { apiKeyUsage: CamelKeys<z.infer<typeof Usage>> }) =>
      ok({ ...data.apiKeyUsage, items: data.apiKeyUsage.items.map((item) => ({ ...item, counts: snakeKeys<z.infer<typeof Counts>>(item.counts) })) }),
  }),
]
