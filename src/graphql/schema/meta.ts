import type { FreshnessStatus } from '../../freshness/status.js'
import type { SourceStatus } from '../../sources/status.js'
import { builder } from '../builder.js'

// Freshness (docs/spec/decisions.md §10): how old the data is, the same object as GET /v1/status.

const SourceFollowStatus = builder.enumType('SourceFollowStatus', {
  values: ['ok', 'degraded', 'stopped'] as const,
  description: 'How a chain source is followed.',
})

const SourceStatusRef = builder.objectRef<SourceStatus>('SourceStatus').implement({
  description: 'A chain of VAULT_SOURCES_FILE as its follower last recorded it (the same on every instance).',
  fields: (t) => ({
    name: t.exposeString('name', { description: '`chain:<name>`.' }),
    chain: t.exposeString('chain'),
    chainId: t.exposeInt('chainId'),
    vaultIds: t.exposeStringList('vaultIds', { description: 'The vaults followed on this chain.' }),
    status: t.field({
      type: SourceFollowStatus,
      resolve: (s) => s.status,
      description:
        '`ok`; `degraded`: paused and retried by itself (the node contradicts itself about a recorded block, or dates blocks ahead of the clock), nothing deleted; `stopped`: a reorg deeper than the journal, nothing deleted, an operator decides. `lastError` says which.',
    }),
    headBlock: t.exposeString('headBlock', { nullable: true, description: "The chain's newest block when last read (a decimal string); null before." }),
    syncedBlock: t.exposeString('syncedBlock', {
      nullable: true,
      description: 'The newest block recorded for every vault of the chain (a decimal string); null before.',
    }),
    lagBlocks: t.exposeInt('lagBlocks', { nullable: true, description: 'headBlock − syncedBlock: the confirmations plus how far behind the follower is.' }),
    syncedAt: t.expose('syncedAt', { type: 'DateTime', nullable: true, description: "The synced block's own time." }),
    lastSuccessAt: t.expose('lastSuccessAt', { type: 'DateTime', nullable: true, description: 'When the follower last read and recorded without failing.' }),
    lastError: t.exposeString('lastError', { nullable: true, description: 'The last failure, one line; null once it has not failed since.' }),
    lastErrorAt: t.expose('lastErrorAt', { type: 'DateTime', nullable: true }),
  }),
})

const Meta = builder.objectRef<FreshnessStatus>('Meta').implement({
  description: 'How old the data is (GET /v1/status).',
  fields: (t) => ({
    dataAsOf: t.expose('dataAsOf', {
      type: 'DateTime',
      nullable: true,
      description:
        'The newest vault snapshot or transaction time the gateway holds (the Data-As-Of header of answers that read no particular vault); null before any data.',
    }),
    lastImportAt: t.expose('lastImportAt', { type: 'DateTime', nullable: true, description: 'When the last import was written; null before the first.' }),
    sources: t.expose('sources', { type: [SourceStatusRef], description: 'The chain sources; empty without VAULT_SOURCES_FILE.' }),
    stale: t.exposeBoolean('stale', {
      description: 'dataAsOf is older than STALE_AFTER_MS (or there is no data); never when STALE_AFTER_MS is 0. The gateway keeps answering either way.',
    }),
  }),
})

builder.queryField('meta', (t) =>
  t.field({
    type: Meta,
    description: 'How old the data is (docs/spec/decisions.md §10).',
    resolve: async (_root, _args, ctx) => {
      const times = await ctx.dataTimes()
      if (!ctx.freshness) return { ...times, sources: [], stale: false }
      return ctx.freshness.status(ctx.now, times)
    },
  }),
)
