import type { GraphQLSchema } from 'graphql'
import { builder } from '../builder.js'
import './scalars.js'
import './vault.js'
import './composition.js'
import './performance.js'
import './user.js'
import './transaction.js'
import './position.js'
import './api-key.js'
import './subscription.js'
import './meta.js'

/** The schema `schema.graphql` is printed from. */
export const schema = builder.toSchema({ sortSchema: false })

let subgraph: GraphQLSchema | undefined

/**
 * The schema served with GRAPHQL_FEDERATION=true (decisions §15): the same types and fields plus an
 * Apollo Federation 2 subgraph's `_service { sdl }` and `_entities`, with `Vault` an entity keyed
 * by `id` (src/graphql/schema/vault.ts). Built on first use, so a gateway without federation
 * never builds it. The link names the Federation version whose directives it imports.
 */
export function subgraphSchema(): GraphQLSchema {
  subgraph ??= builder.toSubGraphSchema({ sortSchema: false, linkUrl: 'https://specs.apollo.dev/federation/v2.6', federationDirectives: ['@key'] })
  return subgraph
}

/** The schema a gateway with these settings serves. */
export function servedSchema(graphql: { federation: boolean }): GraphQLSchema {
  return graphql.federation ? subgraphSchema() : schema
}
