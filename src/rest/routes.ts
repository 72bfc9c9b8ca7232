import { apiKeyRoutes } from './api-key-routes.js'
import type { RestRoute } from './shim.js'
import { userRoutes } from './user-routes.js'
import { vaultRoutes } from './vault-routes.js'

/**
 * The REST shim's route table: every documented `/v1` path, each a fixed GraphQL document
 * plus the mapping of its parameters and result. Route modules per domain export their rows.
 */
export const restRoutes: RestRoute[] = [...vaultRoutes, ...userRoutes, ...apiKeyRoutes]
