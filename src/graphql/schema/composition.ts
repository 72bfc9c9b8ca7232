import { builder } from '../builder.js'
import { cost } from '../cost.js'
import { PUBLIC } from '../public-operations.js'
import {
  groupAllocations,
  INTERVAL_MS,
  MAX_POINTS,
  seriesRequest,
  seriesSpec,
  TIMEFRAME_BUCKETS,
  type Composition as CompositionShape,
  type GroupBy,
  type Interval,
  type Position,
  type Series,
  type SeriesSpec,
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

/**
 * Points of a series for the cost limit, from its `timeframe` or `range` argument (as timeframeBuckets
 * reads them): a range counts its buckets when from, to and interval can be read, else the most a
 * range may answer (MAX_POINTS).
 */
export function seriesBuckets(args: Record<string, unknown>): number {
  const range = args.range as { from?: unknown; to?: unknown; interval?: unknown } | undefined | null
  if (range === undefined || range === null) return timeframeBuckets(args.timeframe)
  const byName: Record<string, Interval> = { PT1H: '1h', PT6H: '6h', P1D: '1d', P1W: '1w' }
  const step = typeof range.interval === 'string' ? INTERVAL_MS[byName[range.interval] ?? (range.interval as Interval)] : undefined
  const from = typeof range.from === 'string' ? Date.parse(range.from) : Number.NaN
  const to = typeof range.to === 'string' ? Date.parse(range.to) : Number.NaN
  if (step === undefined || Number.isNaN(from) || Number.isNaN(to)) return MAX_POINTS
  return Math.max(1, Math.min(MAX_POINTS, Math.ceil((to - from) / step) + 1))
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

export const SeriesInterval = builder.enumType('SeriesInterval', {
  description: 'The step of a series asked for by range; buckets sit on the same fixed UTC grid as the timeframes.',
  values: {
    PT1H: { value: '1h' as Interval, description: 'Whole hours.' },
    PT6H: { value: '6h' as Interval, description: '00:00, 06:00, 12:00 and 18:00 UTC.' },
    P1D: { value: '1d' as Interval, description: 'Midnight UTC.' },
    P1W: { value: '1w' as Interval, description: 'Monday 00:00 UTC.' },
  },
})

export const SeriesRange = builder.inputType('SeriesRange', {
  description: `Any range and step (decisions §14): one point per bucket [t, t + step) that starts before \`to\` and holds or follows \`from\`, none starting after now, at most ${MAX_POINTS}. Not together with \`timeframe\`.`,
  fields: (t) => ({
    from: t.field({ type: 'DateTime', required: true, description: 'The first point is the bucket holding it.' }),
    to: t.field({ type: 'DateTime', description: 'Exclusive; now when left out.' }),
    interval: t.field({ type: SeriesInterval, description: `The step; when left out, the smallest giving at most ${MAX_POINTS} points.` }),
  }),
})

/** The window of a series field from its `timeframe` and `range` arguments (`bad_request` when they do not make one). */
export function seriesSpecOf(
  args: { timeframe?: Timeframe | null; range?: { from: Date; to?: Date | null; interval?: Interval | null } | null },
  now: Date,
): SeriesSpec {
  return seriesSpec(seriesRequest({ timeframe: args.timeframe, ...args.range }, 'range'), now)
}

export const CompositionPosition = builder.objectRef<Position>('CompositionPosition').implement({
  extensions: PUBLIC,
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
  extensions: PUBLIC,
  description: "A vault's current composition: its latest snapshot, grouped.",
  fields: (t) => ({
    asOf: t.expose('asOf', { type: 'DateTime', nullable: true, description: 'When the snapshot was taken; null while the vault has none.' }),
    positions: t.field({ type: [CompositionPosition], description: 'Sorted by pct desc, then name.', resolve: (c) => c.positions }),
  }),
})

export const CompositionPoint = builder.objectRef<Series['points'][number]>('CompositionPoint').implement({
  extensions: PUBLIC,
  description: 'The composition in one bucket of a series: the last snapshot taken before the bucket closed.',
  fields: (t) => ({
    t: t.expose('t', { type: 'DateTime', description: "The bucket's start." }),
    weightsPct: t.exposeFloatList('weightsPct', { description: 'One weight (percent) per label, in the order of `labels`; 0 where the group is absent.' }),
  }),
})

export const CompositionSeries = builder.objectRef<Series & { groupBy: GroupBy } & Omit<SeriesSpec, 'window'>>('CompositionSeries').implement({
  extensions: PUBLIC,
  description: 'How a composition moved over a timeframe ending now or a range. No points before the first snapshot.',
  fields: (t) => ({
    groupBy: t.expose('groupBy', { type: CompositionGroupBy }),
    timeframe: t.expose('timeframe', { type: CompositionTimeframe, nullable: true, description: 'Null for a range.' }),
    from: t.expose('from', { type: 'DateTime', nullable: true, description: "A range's from, as asked; null for a timeframe." }),
    to: t.expose('to', { type: 'DateTime', nullable: true, description: "A range's to (now when it was left out); null for a timeframe." }),
    interval: t.expose('interval', {
      type: SeriesInterval,
      nullable: true,
      description: "A range's step (the default one when it was left out); null for a timeframe.",
    }),
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
    description: 'Group weights over a timeframe ending now (P30D when neither timeframe nor range is given) or over a range.',
    // One point per bucket: the bucket count is what a series costs.
    extensions: cost(seriesBuckets),
    args: {
      timeframe: t.arg({ type: CompositionTimeframe, description: 'A window ending now; P30D when neither this nor range is given.' }),
      range: t.arg({ type: SeriesRange, description: 'Any range and step instead of a timeframe.' }),
      groupBy: t.arg({ type: CompositionGroupBy, required: true, defaultValue: 'platform' }),
    },
    resolve: async (vault, args, ctx) => {
      const { window, ...echo } = seriesSpecOf(args, ctx.now)
      return { groupBy: args.groupBy, ...echo, ...(await ctx.loaders.compositionSeries.load({ vaultId: vault.id, window, groupBy: args.groupBy })) }
    },
  }),
)
