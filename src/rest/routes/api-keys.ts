import { z } from 'zod'
import { EVM_ADDRESS } from '../../wallets/address.js'
import { badRequest, quoted } from '../../core/errors.js'
import { KEY_PREFIX_PATTERN, RAW_KEY_PATTERN } from '../../keys/format.js'
import type { Param } from '../params.js'
import { defineRoute, type ErrorDoc, type RestRoute } from '../route.js'
import { component, envelope, selectionOf } from '../wire.js'

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
    body: component(
      'CreateApiKeyRequest',
      z
        .strictObject({ keyPrefix: z.string().regex(KEY_PREFIX_PATTERN).nullable().optional().meta({ description: 'Default "vaultgate".' }) })
        .meta({ description: 'May be empty.' }),
    ),
    document: `mutation CreateApiKey($keyPrefix: String) { createApiKey(keyPrefix: $keyPrefix) { ${RECORD} apiKey } }`,
    variables: ({ body }) => {
      const { keyPrefix, ...rest } = body
      // Strict: a misspelt field (e.g. key_prefix) must not silently give a key with the default prefix.
      const unknown = Object.keys(rest)
      if (unknown.length > 0) throw badRequest(`Unknown field ${quoted(unknown[0]!)}; the body may only hold "keyPrefix".`)
      // `null` is refused like any other non-string: leaving the field out is how to ask for the default.
      if (keyPrefix !== undefined && typeof keyPrefix !== 'string') throw badRequest('keyPrefix must be a string; leave it out for the default prefix.')
      return { keyPrefix: keyPrefix ?? null }
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
]
