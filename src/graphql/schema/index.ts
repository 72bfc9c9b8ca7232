import type { GraphQLFieldResolver, GraphQLSchema } from 'graphql'
import { badRequest } from '../../core/errors.js'
import { isJsonObject } from '../../core/formats.js'
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
  if (subgraph === undefined) {
    subgraph = builder.toSubGraphSchema({ sortSchema: false, linkUrl: 'https://specs.apollo.dev/federation/v2.6', federationDirectives: ['@key'] })
    checkRepresentations(subgraph)
  }
  return subgraph
}

/** The subgraph's entities and the key field a representation of each carries (src/graphql/schema/vault.ts). */
const ENTITY_KEYS: Readonly<Record<string, string>> = { Vault: 'id' }

/**
 * `_entities` is @apollo/subgraph's field: given a representation that is not an object of a known
 * entity with its key, it throws a plain Error naming the client's `__typename` (a 500, a stack
 * and a client string in the log). Its resolver is wrapped here, once, so such a batch is a
 * `bad_request` naming the representation's index instead, before anything is read.
 */
function checkRepresentations(schema: GraphQLSchema): void {
  const field = schema.getQueryType()?.getFields()._entities
  const resolve = field?.resolve as GraphQLFieldResolver<unknown, unknown, { representations?: unknown }> | undefined
  if (!field || !resolve) throw new Error('The subgraph schema has no _entities resolver to wrap')
  const entities = Object.keys(ENTITY_KEYS).join(', ')
  field.resolve = (root, args, context, info) => {
    const list: unknown[] = Array.isArray(args.representations) ? args.representations : []
    list.forEach((r, i) => {
      if (!isJsonObject(r) || typeof r.__typename !== 'string' || !Object.hasOwn(ENTITY_KEYS, r.__typename)) {
        throw badRequest(`representations[${i}]: __typename must name an entity (${entities}).`)
      }
      const key = ENTITY_KEYS[r.__typename] as string
      if (typeof r[key] !== 'string') throw badRequest(`representations[${i}]: ${key} must be a string.`)
    })
    return resolve(root, args, context, info)
  }
}

/** The schema a gateway with these settings serves. */
export function servedSchema(graphql: { federation: boolean }): GraphQLSchema {
  return graphql.federation ? subgraphSchema() : schema
}
