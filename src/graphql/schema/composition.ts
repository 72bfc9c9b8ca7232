import { builder } from '../builder.js'
import { cost } from '../cost.js'
import {
  groupAllocations,
  TIMEFRAME_BUCKETS,
  type Composition as CompositionShape,
  type GroupBy,
  type Position,
  type Series,
  type Timeframe,
} from '../../vaults/composition.js'

/**
 * Points of a series by timeframe, for the cost limit: the GraphQL name (literal or variable) or the
 * internal value (a default). `all`, and a variable that was not sent, count ten years of weeks, the
 * largest plausible length; a value that is no timeframe at all counts 1 (the request is refused
 * when its variables are read, before anything runs).
 */
export function timeframeBuckets(timeframe: unknown): number {
  if (timeframe === undefined) return 520
  const byName: Record<string, Timeframe> = { P7D: '7d', P30D: '30d', P1Y: '1y', ALL: 'all' }
  const value = typeof timeframe === 'string' ? (byName[timeframe] ?? timeframe) : undefined
  if (!value || !(value in TIMEFRAME_BUCKETS)) return 1
  return TIMEFRAME_BUCKETS[value as Timeframe].count ?? 520
}

export const CompositionGroupBy = builder.enumType('CompositionGroupBy', {
  description: 'How allocations are grouped.',
  values: {
    platform: { value: 'platform' as GroupBy, description: 'One entry per platform; `asset` and `symbol` are "mixed" when its members differ.' },
    asset: { value: 'asset' as GroupBy, description: 'One entry per asset; `platform` is "mixed" when its members differ.' },
  },
})

// GraphQL names cannot start with a digit, so the REST values 7d/30d/1y/all become ISO 8601 durations.
export const CompositionTimeframe = builder.enumType('CompositionTimeframe', {
  description: 'The window of a composition series; it always ends now.',
  values: {
    P7D: { value: '7d' as Timeframe, description: 'The last 7 days in 1-hour buckets (168 points).' },
    P30D: { value: '30d' as Timeframe, description: 'The last 30 days in 6-hour buckets (120 points).' },
    P1Y: { value: '1y' as Timeframe, description: 'The last 365 days in 1-day buckets (365 points).' },
    ALL: { value: 'all' as Timeframe, description: "Everything since the vault's first snapshot, in 1-week buckets (Monday 00:00 UTC)." },
  },
})

export const CompositionPosition = builder.objectRef<Position>('CompositionPosition').implement({
  description: 'One group of allocations.',
  fields: (t) => ({
    platform: t.exposeString('platform'),
    asset: t.exposeString('asset'),
    symbol: t.exposeString('symbol'),
    pct: t.exposeFloat('pct', { description: 'Share of the vault, percent (0-100).' }),
    apyEstPct: t.exposeFloat('apyEstPct', { description: 'Estimated APY, percent; the pct-weighted mean of the group.' }),
    icon: t.exposeString('icon', { description: "The icon of the group's largest member." }),
  }),
})

export const Composition = builder.objectRef<CompositionShape>('Composition').implement({
  description: "A vault's current composition: its latest snapshot, grouped.",
  fields: (t) => ({
    asOf: t.expose('asOf', { type: 'DateTime', nullable: true, description: 'When the snapshot was taken; null while the vault has none.' }),
    positions: t.field({ type: [CompositionPosition], description: 'Sorted by pct desc, then name.', resolve: (c) => c.positions }),
  }),
})

export const CompositionPoint = builder.objectRef<Series['points'][number]>('CompositionPoint').implement({
  description: 'The composition in one bucket of a series: the last snapshot taken before the bucket closed.',
  fields: (t) => ({
    t: t.expose('t', { type: 'DateTime', description: "The bucket's start." }),
    weightsPct: t.exposeFloatList('weightsPct', { description: 'One weight (percent) per label, in the order of `labels`; 0 where the group is absent.' }),
  }),
})

export const CompositionSeries = builder.objectRef<Series & { groupBy: GroupBy; timeframe: Timeframe }>('CompositionSeries').implement({
  description: 'How a composition moved over a window ending now. No points before the first snapshot.',
  fields: (t) => ({
    groupBy: t.expose('groupBy', { type: CompositionGroupBy }),
    timeframe: t.expose('timeframe', { type: CompositionTimeframe }),
    labels: t.exposeStringList('labels', { description: 'Every group present in the window, by weight in the newest point desc, then name.' }),
    points: t.field({ type: [CompositionPoint], description: 'Oldest first.', resolve: (s) => s.points }),
  }),
})

builder.prismaObjectField('Vault', 'composition', (t) =>
  t.field({
    type: Composition,
    nullable: true,
    description: 'The latest composition snapshot, grouped; `asOf` null and no positions while the vault has none.',
    args: { groupBy: t.arg({ type: CompositionGroupBy, required: true, defaultValue: 'platform' }) },
    resolve: async (vault, args, ctx) => {
      const snapshot = await ctx.loaders.latestSnapshot.load({ vaultId: vault.id, now: ctx.now })
      return snapshot ? { asOf: snapshot.asOf, positions: groupAllocations(snapshot.allocations, args.groupBy) } : { asOf: null, positions: [] }
    },
  }),
)

builder.prismaObjectField('Vault', 'compositionSeries', (t) =>
  t.field({
    type: CompositionSeries,
    description: 'Group weights over a window ending now.',
    // One point per bucket: the bucket count is what a series costs.
    extensions: cost((args) => timeframeBuckets(args.timeframe)),
    args: {
      timeframe: t.arg({ type: CompositionTimeframe, required: true, defaultValue: '30d' }),
      groupBy: t.arg({ type: CompositionGroupBy, required: true, defaultValue: 'platform' }),
    },
    resolve: async (vault, { timeframe, groupBy }, ctx) => ({
      groupBy,
      timeframe,
      ...(await ctx.loaders.compositionSeries.load({ vaultId: vault.id, timeframe, groupBy, now: ctx.now })),
    }),
  }),
)
