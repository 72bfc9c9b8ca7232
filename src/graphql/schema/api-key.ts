import { builder } from '../builder.js'
import { activeApiKey, createApiKey, revokeApiKey, type ApiKeyRecord } from '../../keys/service.js'
import { parseKeyPrefix } from '../../keys/format.js'

// The API key record of spec §2. Every operation acts for the wallet of the caller's wallet session
// (context.viewer(): bearer JWT, X-Service-Wallet, allowlist), never for a wallet named in arguments.

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never

function recordFields<T extends ApiKeyRecord>(t: PothosSchemaTypes.ObjectFieldBuilder<Types, T>) {
  return {
    id: t.field({ type: 'ID', description: 'UUID of the key.', resolve: (k) => k.id }),
    keyPrefix: t.field({ type: 'String', description: 'The first part of the raw key, before its last "_".', resolve: (k) => k.keyPrefix }),
    createdAtMs: t.field({ type: 'UnixMs', description: 'Creation time.', resolve: (k) => k.createdAt }),
    expiresAtMs: t.field({ type: 'UnixMs', description: '30 days after creation.', resolve: (k) => k.expiresAt }),
    revokedAtMs: t.field({ type: 'UnixMs', nullable: true, description: 'Null while the key is not revoked.', resolve: (k) => k.revokedAt }),
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
    description: "The caller's active API key, or null when it has none.",
    resolve: async (_root, _args, ctx) => activeApiKey((await ctx.viewer()).wallet, ctx.clock()),
  }),
)

builder.mutationField('createApiKey', (t) =>
  t.field({
    type: NewApiKey,
    description: 'Creates an API key for the caller; its previous key is revoked in the same transaction.',
    args: { keyPrefix: t.arg.string({ description: 'Matches [A-Za-z0-9][A-Za-z0-9_-]{0,31}; default "vaultgate".' }) },
    resolve: async (_root, args, ctx) => {
      const { wallet } = await ctx.viewer()
      const { record, apiKey } = await createApiKey(wallet, parseKeyPrefix(args.keyPrefix), ctx.clock)
      return { ...record, apiKey }
    },
  }),
)

builder.mutationField('revokeApiKey', (t) =>
  t.field({
    type: RevokeApiKeyResult,
    description: "Revokes the caller's active API key.",
    resolve: async (_root, _args, ctx) => ({ revoked: await revokeApiKey((await ctx.viewer()).wallet, ctx.clock) }),
  }),
)
