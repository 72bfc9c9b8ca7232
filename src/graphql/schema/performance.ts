import { builder } from '../builder.js'
import { cost } from '../cost.js'
import { CompositionTimeframe, timeframeBuckets } from './composition.js'
import type { Timeframe } from '../../vaults/composition.js'
import type { PerformanceFlag as Flag, PerformancePoint as Point, VaultPerformance as Performance } from '../../vaults/store.js'

// Vault performance history (docs/spec/decisions.md §9; the rules: src/vaults/performance.ts).
// The REST shim's /v1/vaults/{id}/performance[/series] run these fields.

const apy = (description: string) =>
  `Realized APY over ${description}, percent (net of fees); null when the history does not reach back that far, never 0 for missing data.`

export const VaultPerformance = builder.objectRef<Performance>('VaultPerformance').implement({
  description:
    "A vault's newest snapshot up to now and its realized APY windows: ((p1 / p0)^(365 days / (t1 − t0)) − 1) × 100 with p1 the newest snapshot not flagged as a spike and p0 the newest unflagged snapshot at least the window before it. Every field is null while the vault has no snapshot.",
  fields: (t) => ({
    asOf: t.expose('asOf', { type: 'DateTime', nullable: true, description: "The newest snapshot's time." }),
    sharePrice: t.expose('sharePrice', { type: 'Decimal', nullable: true, description: 'In base-asset units.' }),
    tvl: t.expose('tvl', { type: 'Decimal', nullable: true, description: 'In base-asset units.' }),
    tvlUsd: t.expose('tvlUsd', { type: 'Decimal', nullable: true, description: 'tvl × the base asset USD price; null when the price is unknown.' }),
    apy1d: t.float({ nullable: true, description: apy('1 day'), resolve: (p) => p.apyPct['1d'] }),
    apy7d: t.float({ nullable: true, description: apy('7 days'), resolve: (p) => p.apyPct['7d'] }),
    apy30d: t.float({ nullable: true, description: apy('30 days'), resolve: (p) => p.apyPct['30d'] }),
    apy90d: t.float({ nullable: true, description: apy('90 days'), resolve: (p) => p.apyPct['90d'] }),
    apy1y: t.float({ nullable: true, description: apy('365 days'), resolve: (p) => p.apyPct['1y'] }),
    apyInception: t.float({
      nullable: true,
      description: 'Realized APY since the first snapshot, percent; null while that is less than a day before the newest unflagged one.',
      resolve: (p) => p.apyPct.inception,
    }),
  }),
})

export const PerformanceFlag = builder.enumType('PerformanceFlag', {
  description: 'Why a point is marked.',
  values: {
    spike: {
      value: 'spike' as Flag,
      description: 'Its share price moved more than SPIKE_PCT percent (default 50) from the previous snapshot: left out of APY windows, its own APY is null.',
    },
  },
})

export const PerformancePoint = builder.objectRef<Point>('PerformancePoint').implement({
  description: 'A vault in one bucket of a series: the last snapshot taken before the bucket closed.',
  fields: (t) => ({
    t: t.expose('t', { type: 'DateTime', description: "The bucket's start." }),
    sharePrice: t.expose('sharePrice', { type: 'Decimal', description: 'In base-asset units.' }),
    tvl: t.expose('tvl', { type: 'Decimal', description: 'In base-asset units.' }),
    tvlUsd: t.expose('tvlUsd', { type: 'Decimal', nullable: true, description: 'Null when the base asset USD price is unknown.' }),
    apy7dPct: t.exposeFloat('apy7dPct', {
      nullable: true,
      description: "The 7-day realized APY as of this point's snapshot, percent; null on a spike and where the history does not reach 7 days back.",
    }),
    flags: t.field({ type: [PerformanceFlag], description: 'Empty unless the point is marked.', resolve: (p) => p.flags }),
  }),
})

export const PerformanceSeries = builder.objectRef<{ timeframe: Timeframe; points: Point[] }>('PerformanceSeries').implement({
  description: "Share price, TVL and 7-day APY over a window ending now, on the composition series' grid. No points before the first snapshot.",
  fields: (t) => ({
    timeframe: t.expose('timeframe', { type: CompositionTimeframe }),
    points: t.field({ type: [PerformancePoint], description: 'Oldest first.', resolve: (s) => s.points }),
  }),
})

builder.prismaObjectField('Vault', 'performance', (t) =>
  t.field({
    type: VaultPerformance,
    description: 'The newest snapshot and the realized APY windows. A list of vaults costs one statement for all of them.',
    resolve: (vault, _args, ctx) => ctx.loaders.performance.load({ vaultId: vault.id, now: ctx.now }),
  }),
)

builder.prismaObjectField('Vault', 'performanceSeries', (t) =>
  t.field({
    type: PerformanceSeries,
    description: 'Share price, TVL and 7-day APY per bucket over a window ending now, on the same grid as compositionSeries.',
    // One point per bucket: the bucket count is what a series costs.
    extensions: cost((args) => timeframeBuckets(args.timeframe)),
    args: { timeframe: t.arg({ type: CompositionTimeframe, required: true, defaultValue: '30d' }) },
    resolve: async (vault, { timeframe }, ctx) => ({
      timeframe,
      points: await ctx.loaders.performanceSeries.load({ vaultId: vault.id, timeframe, now: ctx.now }),
    }),
  }),
)
