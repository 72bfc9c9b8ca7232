import SchemaBuilder from '@pothos/core'
import DirectivesPlugin from '@pothos/plugin-directives'
import FederationPlugin from '@pothos/plugin-federation'
import PrismaPlugin from '@pothos/plugin-prisma'
import RelayPlugin from '@pothos/plugin-relay'
import type { Context } from './context.js'
import { PUBLIC } from './public-operations.js'
import type { Decimal } from '../core/decimal.js'
import { getDatamodel } from '../generated/pothos-types.js'
import type PrismaTypes from '../generated/pothos-types.js'

export const builder = new SchemaBuilder<{
  Context: Context
  PrismaTypes: PrismaTypes
  DefaultFieldNullability: false
  Scalars: {
    ID: { Input: string; Output: string }
    Decimal: { Input: string; Output: Decimal | { toFixed(): string } | string }
    DateTime: { Input: Date; Output: Date }
    UnixMs: { Input: number; Output: Date | number }
    Milliseconds: { Input: number; Output: number }
  }
}>({
  // Federation last, as its docs ask; it changes nothing in toSchema(), only toSubGraphSchema() (src/graphql/schema/index.ts).
  plugins: [PrismaPlugin, RelayPlugin, DirectivesPlugin, FederationPlugin],
  defaultFieldNullability: false,
  prisma: {
    // The client the context carries (Context.db), as every other resolver reads it.
    client: (ctx) => ctx.db,
    dmmf: getDatamodel(),
    filterConnectionTotalCount: true,
    onUnusedQuery: process.env.NODE_ENV === 'production' ? null : 'warn',
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    // A page's cursors and flags: public wherever the connection above it is (the classifier checks the whole path).
    pageInfoTypeOptions: { extensions: PUBLIC },
  },
})

builder.queryType({})
builder.mutationType({})
