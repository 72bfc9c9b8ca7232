import { builder } from '../builder.js'
import { cost } from '../cost.js'
import { PUBLIC } from '../public-operations.js'
import { CompositionTimeframe, SeriesInterval, SeriesRange, seriesBuckets, seriesSpecOf } from './composition.js'
import type { SeriesSpec } from '../../vaults/composition.js'
import { APY_WINDOWS, type ApyBasisEntry, type ApyWindow as Window } from '../../vaults/performance.js'
import type { PerformanceFlag as Flag, PerformancePoint as Point, VaultPerformance as Performance } from '../../vaults/store.js'

// Vault performance history (docs/spec/decisions.md §9; the rules: src/vaults/performance.ts).
// The REST shim's /v1/vaults/{id}/performance[/series] run these fields.

const apy = (description: string) =>
  `Realized APY over ${description}, percent (net of fees); null when the history does not reach back that far, never 0 for missing data.`

// GraphQL names cannot start with a digit: the REST keys 1d … 1y become ISO 8601 durations.
export const ApyWindowEnum = builder.enumType('ApyWindow', {
  description: 'A realized-APY window.',
  values: {
    P1D: { value: '1d' as Window | 'inception', description: '1 day (apy1d).' },
    P7D: { value: '7d' as Window | 'inception', description: '7 days (apy7d).' },
    P30D: { value: '30d' as Window | 'inception', description: '30 days (apy30d).' },
    P90D: { value: '90d' as Window | 'inception', description: '90 days (apy90d).' },
    P1Y: { value: '1y' as Window | 'inception', description: '365 days (apy1y).' },
    INCEPTION: { value: 'inception' as Window | 'inception', description: 'Since the first snapshot (apyInception).' },
  },
})

export const ApyBasis = builder.objectRef<ApyBasisEntry & { window: Window | 'inception' }>('ApyBasis').implement({
  extensions: PUBLIC,
  description: 'The two snapshots an APY came from: ((sharePriceTo / sharePriceFrom)^(365 days / (to − from)) − 1) × 100, rounded to 6 decimals, is that APY.',
  fields: (t) => ({
    window: t.expose('window', { type: ApyWindowEnum }),
    from: t.expose('from', { type: 'DateTime', description: 's0: the time of the snapshot the window starts from.' }),
    to: t.expose('to', { type: 'DateTime', description: 's1: the time of the newest snapshot not flagged as a spike.' }),
    sharePriceFrom: t.expose('sharePriceFrom', { type: 'Decimal', description: "s0's share price, exact." }),
    sharePriceTo: t.expose('sharePriceTo', { type: 'Decimal', description: "s1's share price, exact." }),
  }),
})

export const VaultPerformance = builder.objectRef<Performance>('VaultPerformance').implement({
  extensions: PUBLIC,
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
    basis: t.field({
      type: [ApyBasis],
      description: 'The snapshots behind each APY that is not null, in window order (1d, 7d, 30d, 90d, 1y, inception).',
      resolve: (p) =>
        [...APY_WINDOWS, 'inception' as const].flatMap((window) => {
          const b = p.apyBasis[window]
          return b ? [{ window, ...b }] : []
        }),
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
  extensions: PUBLIC,
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

export const PerformanceSeries = builder.objectRef<Omit<SeriesSpec, 'window'> & { points: Point[] }>('PerformanceSeries').implement({
  extensions: PUBLIC,
  description: "Share price, TVL and 7-day APY over a timeframe ending now or a range, on the composition series' grid. No points before the first snapshot.",
  fields: (t) => ({
    timeframe: t.expose('timeframe', { type: CompositionTimeframe, nullable: true, description: 'Null for a range.' }),
    from: t.expose('from', { type: 'DateTime', nullable: true, description: "A range's from, as asked; null for a timeframe." }),
    to: t.expose('to', { type: 'DateTime', nullable: true, description: "A range's to (now when it was left out); null for a timeframe." }),
    interval: t.expose('interval', {
      type: SeriesInterval,
      nullable: true,
      description: "A range's step (the default one when it was left out); null for a timeframe.",
    }),
    points: t.field({ type: [PerformancePoint], description: 'Oldest first.', resolve: (s) => s.points }),
  }),
})

/** The time a performance is computed at: `at`, but never later than the request's now (no data is newer). */
const performanceTime = (at: Date | null | undefined, now: Date) => (at && at.getTime() < now.getTime() ? at : now)

builder.prismaObjectField('Vault', 'performance', (t) =>
  t.field({
    type: VaultPerformance,
    description:
      'The newest snapshot and the realized APY windows, at now or as of `at`. A list of vaults costs one statement for all of them (per distinct `at`).',
    args: {
      at: t.arg({
        type: 'DateTime',
        description:
          'Compute as of this time: s1 is the newest snapshot at or before it (a time after now reads as now). Every value is null when there is none.',
      }),
    },
    resolve: (vault, { at }, ctx) => ctx.loaders.performance.load({ vaultId: vault.id, now: performanceTime(at, ctx.now) }),
  }),
)

builder.prismaObjectField('Vault', 'performanceSeries', (t) =>
  t.field({
    type: PerformanceSeries,
    description:
      'Share price, TVL and 7-day APY per bucket over a timeframe ending now (P30D when neither timeframe nor range is given) or a range, on the same grid as compositionSeries.',
    // One point per bucket: the bucket count is what a series costs.
    extensions: cost(seriesBuckets),
    args: {
      timeframe: t.arg({ type: CompositionTimeframe, description: 'A window ending now; P30D when neither this nor range is given.' }),
      range: t.arg({ type: SeriesRange, description: 'Any range and step instead of a timeframe.' }),
    },
    resolve: async (vault, args, ctx) => {
      const { window, ...echo } = seriesSpecOf(args, ctx.now)
      return { ...echo, points: await ctx.loaders.performanceSeries.load({ vaultId: vault.id, window }) }
    },
  }),
)
