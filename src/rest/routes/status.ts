import { z } from 'zod'
import { defineRoute, type RestRoute } from '../route.js'
import { type CamelKeys, component, selectionOf, snakeKeys, Timestamp } from '../wire.js'

// GET /v1/status (docs/spec/decisions.md §10): how old the data is; GraphQL `meta` with its keys in
// snake_case. Never cached: `stale` moves with the clock and the sources' state with the follower.

const SourceStatusSchema = component(
  'SourceStatus',
  z
    .object({
      name: z.string().meta({ description: '`chain:<name>`: each chain of VAULT_SOURCES_FILE is one source.' }),
      chain: z.string(),
      chain_id: z.int(),
      vault_ids: z.array(z.string()).meta({ description: 'The vaults followed on this chain.' }),
      status: z.enum(['ok', 'degraded', 'stopped']).meta({
        description:
          '`ok`; `degraded`: paused and retried by itself (the node contradicts itself about a recorded block, or dates blocks ahead of the clock), nothing deleted; `stopped`: a reorg deeper than the journal, nothing deleted, an operator decides. `last_error` says which.',
      }),
      head_block: z.string().nullable().meta({ description: "The chain's newest block when last read, a decimal string; null before." }),
      synced_block: z.string().nullable().meta({ description: 'The newest block recorded for every vault of the chain, a decimal string; null before.' }),
      lag_blocks: z.int().nullable().meta({ description: 'head_block − synced_block: the confirmations plus how far behind the follower is.' }),
      synced_at: Timestamp.nullable().meta({ description: "The synced block's own time." }),
      last_success_at: Timestamp.nullable().meta({ description: 'When the follower last read and recorded without failing.' }),
      last_error: z.string().nullable().meta({ description: 'The last failure, one line; null once it has not failed since.' }),
      last_error_at: Timestamp.nullable(),
    })
    .meta({ description: 'A chain source as its follower last recorded it (the same on every instance).' }),
)

export const StatusSchema = component(
  'Status',
  z
    .object({
      data_as_of: Timestamp.nullable().meta({
        description:
          'The newest vault snapshot or transaction time the gateway holds (the Data-As-Of header of answers that read no particular vault); null before any data.',
      }),
      last_import_at: Timestamp.nullable().meta({ description: 'When the last import was written (admin, CLI, demo or chain source); null before the first.' }),
      sources: z.array(SourceStatusSchema).meta({ description: 'The chain sources; empty without VAULT_SOURCES_FILE.' }),
      stale: z.boolean().meta({
        description:
          'data_as_of is older than STALE_AFTER_MS (default 1 h), or there is no data; never when STALE_AFTER_MS is 0. The gateway keeps answering either way.',
      }),
    })
    .meta({ description: 'How old the data is (decisions §10).' }),
)

type StatusWire = z.input<typeof StatusSchema>

export const statusRoutes: RestRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/status',
    summary: 'Get the data freshness',
    description:
      'How old the data is: the newest snapshot or transaction time, the last import, the chain sources and whether the data is stale. The same as GraphQL `meta`.',
    tags: ['Status'],
    params: {},
    query: {},
    document: `query Status { meta { ${selectionOf(StatusSchema)} } }`,
    variables: () => ({}),
    shape: (data: { meta: CamelKeys<StatusWire> }) => snakeKeys<StatusWire>(data.meta),
    response: StatusSchema,
    errors: [],
  }),
]
