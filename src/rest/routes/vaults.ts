import { z } from 'zod'
import { VaultStatus } from '../../generated/prisma/enums.js'
import { GROUP_BYS, TIMEFRAMES, type GroupBy, type Timeframe } from '../../vaults/composition.js'
import { PAGE_SIZE } from '../../core/page.js'
import { REST_CURSOR } from '../../core/signed-cursor.js'
import { decodeVaultCursor } from '../../vaults/list.js'
import { notFound, quoted } from '../../core/errors.js'
import { choiceParam, limitParam, segmentParam, textParam } from '../params.js'
import { defineRoute, type RestRoute } from '../route.js'
import { Amount, type CamelKeys, component, page, Percent, selectionOf, snakeKeys, Timestamp } from '../wire.js'

// Vault reads: public and slow to change, so shared caches may keep them for a few seconds.
const cache = { scope: 'public', maxAgeSeconds: 10 } as const

const VAULT_STATUSES = Object.values(VaultStatus)

const Bps = z.int32().min(0).meta({ description: 'Basis points.' })

export const VaultSchema = component(
  'Vault',
  z
    .object({
      id: z.string(),
      name: z.string(),
      chain: z.string(),
      chain_id: z.string().nullable(),
      symbol: z.string().meta({ description: "The vault share's symbol." }),
      base_asset: z.string().meta({ description: 'The asset deposited and redeemed; amounts are in its units.' }),
      status: z.enum(VaultStatus),
      tvl: Amount.meta({ description: 'Total value locked, in base-asset units.' }),
      share_price: Amount.meta({ description: 'Price of one share, in base-asset units.' }),
      perf_fee_bps: Bps,
      mgmt_fee_bps: Bps.nullable(),
      contract: component('Contract', z.object({ address: z.string() })),
      deposit_constraints: component(
        'DepositConstraints',
        z
          .object({ max_deposit: Amount.nullable(), min_deposit: Amount.nullable(), paused: z.boolean().nullable() })
          .meta({ description: 'Each field is null when the vault publishes none.' }),
      ),
      withdraw_constraints: component(
        'WithdrawConstraints',
        z
          .object({
            instant_liquidity: z.boolean().nullable(),
            instant_slippage_max_bps: Bps.nullable(),
            redeem_24h_threshold_pct_of_aum: Percent.nullable(),
            redeem_48h_above_threshold: z.boolean().nullable(),
          })
          .meta({ description: 'Each field is null when the vault publishes none.' }),
      ),
      icons: component('Icons', z.object({ dark: z.string().nullable(), light: z.string().nullable() })),
      api_endpoint: z.string(),
      description: z.string().nullable(),
      docs_url: z.string().nullable(),
      inception_date: z.iso.date().nullable().meta({ description: 'A calendar date, YYYY-MM-DD.' }),
      strategy_brief: z.string().nullable(),
    })
    .meta({ description: 'An investment vault with its live values; every field is present, null when unset.' }),
)

const VaultList = component(
  'VaultList',
  z.object({
    items: z.array(VaultSchema),
    next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  }),
)

const CompositionSchema = component(
  'Composition',
  z.object({
    as_of: Timestamp.nullable().meta({ description: 'When the snapshot was taken; null while the vault has none (and `positions` is empty).' }),
    positions: z
      .array(
        component(
          'CompositionPosition',
          z.object({
            platform: z.string().meta({ description: '"mixed" when grouping by asset and the members differ.' }),
            asset: z.string().meta({ description: '"mixed" when grouping by platform and the members differ.' }),
            symbol: z.string(),
            pct: Percent.meta({ description: 'Share of the vault, percent (0-100).' }),
            apy_est_pct: z.number().meta({ description: 'Estimated APY, percent; the pct-weighted mean of the group.' }),
            icon: z.string().meta({ description: "The icon of the group's largest member." }),
          }),
        ),
      )
      .meta({ description: 'Sorted by pct desc, then name.' }),
  }),
)

const CompositionSeriesSchema = component(
  'CompositionSeries',
  z.object({
    group_by: z.enum(GROUP_BYS),
    timeframe: z.enum(TIMEFRAMES),
    labels: z.array(z.string()).meta({ description: 'Every group present in the window, by weight in the newest point desc, then name.' }),
    points: z
      .array(
        component(
          'CompositionPoint',
          z.object({
            t: Timestamp.meta({ description: "The bucket's start." }),
            weights_pct: z.array(z.number()).meta({ description: 'One weight (percent) per label, in the order of `labels`; 0 where the group is absent.' }),
          }),
        ),
      )
      .meta({ description: 'Oldest first; none before the first snapshot.' }),
  }),
)

const ApyPct = z.number().nullable()

const PerformanceSchema = component(
  'VaultPerformance',
  z
    .object({
      vault_id: z.string(),
      as_of: Timestamp.nullable().meta({ description: "The newest snapshot's time; null while the vault has none (and so are the other values)." }),
      share_price: Amount.nullable().meta({ description: 'Of the newest snapshot, in base-asset units.' }),
      tvl: Amount.nullable().meta({ description: 'Of the newest snapshot, in base-asset units.' }),
      tvl_usd: Amount.nullable().meta({ description: 'tvl × the base asset USD price, exact; null when the price is unknown.' }),
      apy_pct: component(
        'ApyWindows',
        z
          .object({
            '1d': ApyPct,
            '7d': ApyPct,
            '30d': ApyPct,
            '90d': ApyPct,
            '1y': ApyPct,
            inception: ApyPct.meta({ description: 'Since the first snapshot; null while that is less than a day before s1.' }),
          })
          .meta({
            description:
              'Realized APY per window, percent, net of fees: ((p1 / p0)^(365 days / (t1 − t0)) − 1) × 100, p1 the newest snapshot not flagged as a spike, p0 the newest unflagged snapshot at or before t1 − window. Null (never 0) when the history does not reach back that far.',
          }),
      ),
    })
    .meta({ description: "A vault's newest snapshot and realized APY windows (decisions §9)." }),
)

const PerformanceSeriesSchema = component(
  'PerformanceSeries',
  z.object({
    timeframe: z.enum(TIMEFRAMES),
    points: z
      .array(
        component(
          'PerformancePoint',
          z.object({
            t: Timestamp.meta({ description: "The bucket's start." }),
            share_price: Amount.meta({ description: "The bucket's snapshot's, in base-asset units." }),
            tvl: Amount,
            tvl_usd: Amount.nullable().meta({ description: 'Null when the base asset USD price is unknown.' }),
            apy_7d_pct: z.number().nullable().meta({
              description: "The 7-day realized APY as of the point's snapshot, percent; null on a spike and where the history does not reach 7 days back.",
            }),
            flags: z
              .array(z.enum(['spike']))
              .optional()
              .meta({ description: 'Present only on a marked point: `spike` = its share price moved more than SPIKE_PCT percent from the previous snapshot.' }),
          }),
        ),
      )
      .meta({ description: 'Oldest first; none before the first snapshot (a vault without snapshots answers none).' }),
  }),
)

/** The GraphQL fields behind the spec's Vault (§2), from its wire schema. */
const VAULT_FIELDS = `fragment VaultFields on Vault { ${selectionOf(VaultSchema)} }`

type VaultWire = z.input<typeof VaultSchema>
type VaultData = CamelKeys<VaultWire>

/** The spec's Vault (§2), every field present. */
const vaultBody = (v: VaultData) => snakeKeys<VaultWire>(v)

function found<T>(vault: T | null, id: string): T {
  if (vault === null) throw notFound(`Vault ${quoted(id)} was not found.`)
  return vault
}

/** REST values of `timeframe` and their GraphQL enum names. */
const TIMEFRAME_ENUM: Record<Timeframe, string> = { '7d': 'P7D', '30d': 'P30D', '1y': 'P1Y', all: 'ALL' }

const vaultParams = { vault_id: segmentParam('The vault id.', 'usdc-prime') }
const groupBy = choiceParam(GROUP_BYS, 'Group allocations by platform or by asset.', 'platform')
const timeframe = choiceParam(TIMEFRAMES, 'The window, ending now: 7d (1-hour buckets), 30d (6-hour), 1y (1-day), all (1-week, Monday 00:00 UTC).', '30d')
const tags = ['Vaults']

interface ListData {
  vaults: { edges: { node: VaultData }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } }
}

const listBody = ({ vaults }: ListData) => page(vaults, vaultBody)

type CompositionWire = z.input<typeof CompositionSchema>

interface CompositionData {
  vault: { composition: CamelKeys<CompositionWire> | null } | null
}

function compositionBody(data: CompositionData, id: string) {
  return snakeKeys<CompositionWire>(found(data.vault, id).composition ?? { asOf: null, positions: [] })
}

interface SeriesData {
  vault: { compositionSeries: { labels: string[]; points: { t: string; weightsPct: number[] }[] } } | null
}

function seriesBody(data: SeriesData, id: string, query: { group_by: GroupBy; timeframe: Timeframe }) {
  const series = found(data.vault, id).compositionSeries
  return {
    group_by: query.group_by,
    timeframe: query.timeframe,
    labels: series.labels,
    points: snakeKeys<z.input<typeof CompositionSeriesSchema>['points']>(series.points),
  }
}

interface PerformanceData {
  vault: {
    performance: {
      asOf: string | null
      sharePrice: string | null
      tvl: string | null
      tvlUsd: string | null
      apy1d: number | null
      apy7d: number | null
      apy30d: number | null
      apy90d: number | null
      apy1y: number | null
      apyInception: number | null
    }
  } | null
}

function performanceBody(data: PerformanceData, id: string): z.input<typeof PerformanceSchema> {
  const p = found(data.vault, id).performance
  return {
    vault_id: id,
    as_of: p.asOf,
    share_price: p.sharePrice,
    tvl: p.tvl,
    tvl_usd: p.tvlUsd,
    apy_pct: { '1d': p.apy1d, '7d': p.apy7d, '30d': p.apy30d, '90d': p.apy90d, '1y': p.apy1y, inception: p.apyInception },
  }
}

interface PerformanceSeriesData {
  vault: {
    performanceSeries: { points: { t: string; sharePrice: string; tvl: string; tvlUsd: string | null; apy7dPct: number | null; flags: 'spike'[] }[] }
  } | null
}

function performanceSeriesBody(data: PerformanceSeriesData, id: string, timeframe: Timeframe): z.input<typeof PerformanceSeriesSchema> {
  return {
    timeframe,
    points: found(data.vault, id).performanceSeries.points.map((p) => ({
      t: p.t,
      share_price: p.sharePrice,
      tvl: p.tvl,
      tvl_usd: p.tvlUsd,
      apy_7d_pct: p.apy7dPct,
      ...(p.flags.length > 0 ? { flags: p.flags } : {}),
    })),
  }
}

/** GET /v1/vaults… : each row a fixed GraphQL document, its variables from the request, its result reshaped. */
export const vaultRoutes: RestRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/vaults',
    summary: 'List vaults',
    description: 'Vaults ordered by id, optionally filtered, one page at a time.',
    tags,
    params: {},
    query: {
      limit: limitParam(PAGE_SIZE, 'Vaults per page.'),
      cursor: textParam('The `next_cursor` of the previous page.'),
      chain: textParam('Only vaults on this chain.', 'ethereum'),
      status: choiceParam(VAULT_STATUSES, 'Only vaults in this status.'),
    },
    document: `query Vaults($first: Int!, $after: String, $chain: String, $status: VaultStatus) {
      vaults(first: $first, after: $after, chain: $chain, status: $status) { edges { node { ...VaultFields } } pageInfo { hasNextPage endCursor } }
    } ${VAULT_FIELDS}`,
    variables: ({ query }) => {
      // Checked here too, so that REST names its own parameter (`cursor`, not GraphQL's `after`).
      if (query.cursor !== undefined) decodeVaultCursor({ chain: query.chain ?? null, status: query.status ?? null }, null, query.cursor, REST_CURSOR)
      return { first: query.limit, after: query.cursor, chain: query.chain, status: query.status }
    },
    shape: (data: ListData) => listBody(data),
    response: VaultList,
    errors: ['bad_request'],
    cache,
  }),
  defineRoute({
    method: 'GET',
    path: '/vaults/:vault_id',
    summary: 'Get a vault',
    description: "A vault's metadata with its live values (spec: get_vault).",
    tags,
    params: vaultParams,
    query: {},
    document: `query Vault($id: ID!) { vault(id: $id) { ...VaultFields } } ${VAULT_FIELDS}`,
    variables: ({ params }) => ({ id: params.vault_id }),
    shape: (data: { vault: VaultData | null }, { params }) => vaultBody(found(data.vault, params.vault_id)),
    response: VaultSchema,
    errors: ['not_found'],
    cache,
  }),
  defineRoute({
    method: 'GET',
    path: '/vaults/:vault_id/composition',
    summary: "Get a vault's current composition",
    description: 'The latest snapshot at or before now, grouped. A vault without snapshots answers `as_of: null` and no positions.',
    tags,
    params: vaultParams,
    query: { group_by: groupBy },
    document: `query Composition($id: ID!, $groupBy: CompositionGroupBy!) {
      vault(id: $id) { composition(groupBy: $groupBy) { ${selectionOf(CompositionSchema)} } }
    }`,
    variables: ({ params, query }) => ({ id: params.vault_id, groupBy: query.group_by }),
    shape: (data: CompositionData, { params }) => compositionBody(data, params.vault_id),
    response: CompositionSchema,
    errors: ['bad_request', 'not_found'],
    cache,
  }),
  defineRoute({
    method: 'GET',
    path: '/vaults/:vault_id/composition/series',
    summary: "Get a vault's composition over time",
    description: 'Group weights per bucket over a window ending now, on a fixed UTC grid; ready for a stacked area chart.',
    tags,
    params: vaultParams,
    query: { timeframe, group_by: groupBy },
    document: `query CompositionSeries($id: ID!, $timeframe: CompositionTimeframe!, $groupBy: CompositionGroupBy!) {
      vault(id: $id) { compositionSeries(timeframe: $timeframe, groupBy: $groupBy) { labels points { t weightsPct } } }
    }`,
    variables: ({ params, query }) => ({ id: params.vault_id, timeframe: TIMEFRAME_ENUM[query.timeframe], groupBy: query.group_by }),
    shape: (data: SeriesData, { params, query }) => seriesBody(data, params.vault_id, query),
    response: CompositionSeriesSchema,
    errors: ['bad_request', 'not_found'],
    cache,
  }),
  defineRoute({
    method: 'GET',
    path: '/vaults/:vault_id/performance',
    summary: "Get a vault's performance",
    description:
      'The newest snapshot at or before now (share price, TVL, USD TVL) and the realized APY over 1 day, 7 days, 30 days, 90 days, 1 year and since inception, from share prices. Snapshots whose share price moved more than SPIKE_PCT percent from the previous one are left out of the windows.',
    tags,
    params: vaultParams,
    query: {},
    document: `query Performance($id: ID!) {
      vault(id: $id) { performance { asOf sharePrice tvl tvlUsd apy1d apy7d apy30d apy90d apy1y apyInception } }
    }`,
    variables: ({ params }) => ({ id: params.vault_id }),
    shape: (data: PerformanceData, { params }) => performanceBody(data, params.vault_id),
    response: PerformanceSchema,
    errors: ['not_found'],
    cache,
  }),
  defineRoute({
    method: 'GET',
    path: '/vaults/:vault_id/performance/series',
    summary: "Get a vault's share price, TVL and APY over time",
    description:
      "Per bucket of the composition series' grid, the last snapshot taken before the bucket closed: share price, TVL, USD TVL and the 7-day APY as of that snapshot; spikes marked. Ready for line charts.",
    tags,
    params: vaultParams,
    query: { timeframe },
    document: `query PerformanceSeries($id: ID!, $timeframe: CompositionTimeframe!) {
      vault(id: $id) { performanceSeries(timeframe: $timeframe) { points { t sharePrice tvl tvlUsd apy7dPct flags } } }
    }`,
    variables: ({ params, query }) => ({ id: params.vault_id, timeframe: TIMEFRAME_ENUM[query.timeframe] }),
    shape: (data: PerformanceSeriesData, { params, query }) => performanceSeriesBody(data, params.vault_id, query.timeframe),
    response: PerformanceSeriesSchema,
    errors: ['bad_request', 'not_found'],
    cache,
  }),
]
