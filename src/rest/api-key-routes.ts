import { badRequest } from '../errors.js'
import type { RestRoute } from './shim.js'

// Key management (spec §4): the spec's envelope around the GraphQL result; the record is camelCase
// on the wire as in spec §2. The shim's default Cache-Control (no-store) applies: the create
// response holds the raw key.

const envelope = (data: unknown) => ({ status: 'ok', data, server_time_ms: Date.now() })
const RECORD = 'id keyPrefix createdAtMs expiresAtMs revokedAtMs'

export const apiKeyRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/apiKey',
    document: `mutation CreateApiKey($keyPrefix: String) { createApiKey(keyPrefix: $keyPrefix) { ${RECORD} apiKey } }`,
    variables: ({ body }) => {
      const { keyPrefix, ...rest } = body
      // Strict: a misspelt field (e.g. key_prefix) must not silently give a key with the default prefix.
      const unknown = Object.keys(rest)
      if (unknown.length > 0) throw badRequest(`Unknown field ${unknown[0]}; the body may only hold "keyPrefix".`)
      if (keyPrefix !== undefined && keyPrefix !== null && typeof keyPrefix !== 'string') throw badRequest('keyPrefix must be a string.')
      return { keyPrefix: keyPrefix ?? null }
    },
    shape: (data: { createApiKey: unknown }) => envelope(data.createApiKey),
  },
  {
    method: 'GET',
    path: '/apiKey',
    document: `query ApiKey { apiKey { ${RECORD} } }`,
    variables: () => ({}),
    shape: (data: { apiKey: unknown }) => envelope(data.apiKey),
  },
  {
    method: 'DELETE',
    path: '/apiKey',
    document: 'mutation RevokeApiKey { revokeApiKey { revoked } }',
    variables: () => ({}),
    shape: (data: { revokeApiKey: unknown }) => envelope(data.revokeApiKey),
  },
]
