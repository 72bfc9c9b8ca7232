import { builder } from '../builder.js'
import { cost, pageCost } from '../cost.js'
import { KEY_MANAGEMENT } from '../public-operations.js'
import { checkPageSize } from '../../core/page.js'
import { GRAPHQL_AFTER, REST_CURSOR } from '../../core/signed-cursor.js'
import { parseInput } from '../../core/input.js'
import { CreateApiKeyInput, newKeySettings } from '../../keys/inputs.js'
import { decodeHistoryCursor, KEY_HISTORY_TYPES, keyHistory, type KeyHistoryEntry } from '../../keys/history.js'
import { activeApiKey, createApiKey, revokeApiKey, type ApiKeyRecord } from '../../keys/service.js'
import { checkUsageDays, USAGE_DEFAULT_DAYS, usageOf, USAGE_RETENTION_DAYS, type UsageDay, type VerifyOutcome } from '../../keys/usage.js'

// The API key record of spec §2 with the additions of docs/spec/decisions.md §13 (name, networks,
// last use, time left), the owner's key history and usage. Every operation acts for the wallet of
// the caller's wallet session (context.viewer(): bearer JWT, X-Service-Wallet, allowlist), never
// for a wallet named in arguments.

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never

function recordFields<T extends ApiKeyRecord>(t: PothosSchemaTypes.ObjectFieldBuilder<Types, T>) {
  return {
    id: t.field({ type: 'ID', description: 'UUID of the key.', resolve: (k) => k.id }),
    keyPrefix: t.field({ type: 'String', description: 'The first part of the raw key, before its last "_".', resolve: (k) => k.keyPrefix }),
    createdAtMs: t.field({ type: 'UnixMs', description: 'Creation time.', resolve: (k) => k.createdAt }),
    expiresAtMs: t.field({ type: 'UnixMs', description: '30 days after creation.', resolve: (k) => k.expiresAt }),
    revokedAtMs: t.field({ type: 'UnixMs', nullable: true, description: 'Null while the key is not revoked.', resolve: (k) => k.revokedAt }),
    name: t.field({ type: 'String', nullable: true, description: "The owner's label, or null.", resolve: (k) => k.name }),
    allowedCidrs: t.field({
      type: ['String'],
      description: 'The networks (canonical CIDR) a verification must come from; empty: any IP.',
      resolve: (k) => k.allowedCidrs,
    }),
    lastUsedAtMs: t.field({
      type: 'UnixMs',
      nullable: true,
      description: 'A successful verification at most a minute older than the last one (written at most once a minute); null until the first.',
      resolve: (k) => k.lastUsedAt,
    }),
    expiresInMs: t.field({
      type: 'Milliseconds',
      description: 'Time left until expiry when the request was made (0 once expired).',
      resolve: (k, _args, ctx) => Math.max(0, k.expiresAt.getTime() - ctx.now.getTime()),
    }),
  }
}

export const ApiKey = builder.objectRef<ApiKeyRecord>('ApiKey').implement({
  description: 'An API key for the order exchange, without its secret.',
  fields: (t) => recordFields(t),
})

export const NewApiKey = builder.objectRef<ApiKeyRecord & { apiKey: string }>('NewApiKey').implement({
  description: 'A key just created: the record plus the raw key, which is shown this once and never again.',
  fields: (t) => ({
    ...recordFields(t),
    apiKey: t.exposeString('apiKey', { description: 'The raw key (prefix, "_", secret). Keep it in a server-side secret store.' }),
  }),
})

export const RevokeApiKeyResult = builder.objectRef<{ revoked: boolean }>('RevokeApiKeyResult').implement({
  fields: (t) => ({
    revoked: t.exposeBoolean('revoked', { description: 'True when an active key was revoked, false when there was none.' }),
  }),
})

builder.queryField('apiKey', (t) =>
  t.field({
    type: ApiKey,
    nullable: true,
    extensions: KEY_MANAGEMENT,
    description: "The caller's active API key, or null when it has none.",
    resolve: async (_root, _args, ctx) => activeApiKey(ctx.db, (await ctx.viewer()).wallet, ctx.clock()),
  }),
)

builder.mutationField('createApiKey', (t) =>
  t.field({
    type: NewApiKey,
    extensions: KEY_MANAGEMENT,
    description: 'Creates an API key for the caller; its previous key is revoked in the same transaction.',
    args: {
      keyPrefix: t.arg.string({ description: 'Matches [A-Za-z0-9][A-Za-z0-9_-]{0,31}; default "vaultgate".' }),
      name: t.arg.string({ description: 'A label: 1 to 64 printable characters, without leading or trailing spaces.' }),
      allowedCidrs: t.arg.stringList({
        description:
          'At most 30 IPv4/IPv6 networks ("203.0.113.0/24", "2001:db8::/32"; a bare address is one host) verifications must come from; stored canonical. Absent or empty: any IP.',
      }),
    },
    resolve: async (_root, args, ctx) => {
      // The caller first (an unauthenticated request learns nothing about its arguments), then them.
      const { wallet } = await ctx.viewer()
      // The REST body's schema (POST /v1/apiKey); a GraphQL null is an absent argument.
      const input = parseInput(CreateApiKeyInput, {
        keyPrefix: args.keyPrefix ?? undefined,
        name: args.name ?? undefined,
        allowedCidrs: args.allowedCidrs ?? undefined,
      })
      const { record, apiKey } = await createApiKey(ctx.db, wallet, newKeySettings(input), ctx.clock)
      return { ...record, apiKey }
    },
  }),
)

builder.mutationField('revokeApiKey', (t) =>
  t.field({
    type: RevokeApiKeyResult,
    extensions: KEY_MANAGEMENT,
    description: "Revokes the caller's active API key.",
    resolve: async (_root, _args, ctx) => ({ revoked: await revokeApiKey(ctx.db, (await ctx.viewer()).wallet, ctx.clock) }),
  }),
)

// ---------------------------------------------------------------------------------------------
// History

export const ApiKeyEventType = builder.enumType('ApiKeyEventType', {
  description:
    'created; revoked (by its owner); replaced (by a newer key); disabled (its wallet left the allowlist); expired (30 days passed; dated at the expiry itself).',
  values: KEY_HISTORY_TYPES,
})

export const ApiKeyEvent = builder.objectRef<KeyHistoryEntry>('ApiKeyEvent').implement({
  description: "An entry of the caller's key history.",
  fields: (t) => ({
    type: t.field({ type: ApiKeyEventType, resolve: (e) => e.type }),
    keyId: t.field({ type: 'ID', resolve: (e) => e.keyId }),
    keyPrefix: t.exposeString('keyPrefix'),
    atMs: t.field({ type: 'UnixMs', description: 'When it happened.', resolve: (e) => e.at }),
  }),
})

export const ApiKeyEventConnection = builder.connectionObject(
  { type: ApiKeyEvent, name: 'ApiKeyEventConnection', edgesNullable: { list: false, items: false }, nodeNullable: false },
  { name: 'ApiKeyEventEdge' },
)

builder.queryField('apiKeyEvents', (t) =>
  t.field({
    type: ApiKeyEventConnection,
    description:
      "The caller's key history, newest first: creations, revocations, replacements, allowlist removals and expiries. Forward pagination with after = pageInfo.endCursor.",
    extensions: { ...cost(pageCost), ...KEY_MANAGEMENT },
    args: {
      first: t.arg.int({ description: 'Page size, 1 to 200 (default 50); outside that range a bad_request error.' }),
      after: t.arg.string({ description: 'An endCursor (or edge cursor) from a previous page.' }),
    },
    resolve: async (_root, args, ctx) => {
      const limit = checkPageSize(args.first, 'first')
      const { wallet } = await ctx.viewer()
      // The REST shim (`rest` in Yoga's server context, src/rest/step.ts) names its own parameter.
      const argument = (ctx as { rest?: boolean }).rest ? REST_CURSOR : GRAPHQL_AFTER
      const after = args.after === null || args.after === undefined ? null : decodeHistoryCursor(wallet, args.after, argument)
      const { entries, hasNextPage } = await keyHistory(ctx.db, wallet, ctx.now, after, limit)
      return {
        edges: entries.map((e) => ({ cursor: e.cursor, node: e })),
        pageInfo: { hasNextPage, hasPreviousPage: after !== null, startCursor: entries[0]?.cursor ?? null, endCursor: entries.at(-1)?.cursor ?? null },
      }
    },
  }),
)

// ---------------------------------------------------------------------------------------------
// Usage

const VerificationCounts = builder.objectRef<Record<VerifyOutcome, number>>('ApiKeyVerificationCounts').implement({
  description: "Verifications by outcome: active (accepted), or the reason they were refused (the verify answer's `reason`, in camelCase).",
  fields: (t) => ({
    active: t.exposeInt('active'),
    revoked: t.exposeInt('revoked'),
    expired: t.exposeInt('expired'),
    notWhitelisted: t.exposeInt('not_whitelisted'),
    ipNotAllowed: t.exposeInt('ip_not_allowed'),
  }),
})

const UsageDayRef = builder.objectRef<UsageDay>('ApiKeyUsageDay').implement({
  description: "One key's verifications on one UTC day.",
  fields: (t) => ({
    day: t.exposeString('day', { description: 'The UTC date, YYYY-MM-DD.' }),
    keyId: t.field({ type: 'ID', resolve: (u) => u.keyId }),
    keyPrefix: t.exposeString('keyPrefix'),
    name: t.exposeString('name', { nullable: true }),
    counts: t.field({ type: VerificationCounts, resolve: (u) => u.counts }),
    total: t.exposeInt('total'),
  }),
})

const Usage = builder.objectRef<{ days: number; since: string; items: UsageDay[] }>('ApiKeyUsage').implement({
  description: "The caller's key verifications per key and UTC day (kept 90 days).",
  fields: (t) => ({
    days: t.exposeInt('days'),
    since: t.exposeString('since', { description: 'The first UTC date covered, YYYY-MM-DD (today is the last).' }),
    items: t.field({
      type: [UsageDayRef],
      description: 'Newest day first, then newest key; days without verifications are left out.',
      resolve: (u) => u.items,
    }),
  }),
})

builder.queryField('apiKeyUsage', (t) =>
  t.field({
    type: Usage,
    extensions: KEY_MANAGEMENT,
    description: `Verifications of the caller's keys per key and UTC day, by outcome, over the last \`days\` days (1 to ${USAGE_RETENTION_DAYS}, default ${USAGE_DEFAULT_DAYS}; today included). Counts are written in batches: the last few seconds may not show yet.`,
    args: { days: t.arg.int({ description: `1 to ${USAGE_RETENTION_DAYS}, default ${USAGE_DEFAULT_DAYS}.` }) },
    resolve: async (_root, args, ctx) => {
      const days = checkUsageDays(args.days)
      const { wallet } = await ctx.viewer()
      return usageOf(ctx.db, wallet, days, ctx.now)
    },
  }),
)
