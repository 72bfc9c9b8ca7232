import { apiKeyRoutes } from './api-keys.js'
import type { RestRoute } from '../route.js'
import { statusRoutes } from './status.js'
import { userRoutes } from './users.js'
import { vaultRoutes } from './vaults.js'

/**
 * The REST shim's route table: every documented `/v1` path, each a fixed GraphQL document
 * plus the mapping of its parameters and result. Route modules per domain export their rows.
 */
export const restRoutes: RestRoute[] = [...vaultRoutes, ...userRoutes, ...apiKeyRoutes, ...statusRoutes]
