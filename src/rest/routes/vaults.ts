import { z } from 'zod'
import { VaultStatus } from '../../generated/prisma/enums.js'
import { GROUP_BYS, INTERVALS, MAX_POINTS, seriesRequest, TIMEFRAMES, type GroupBy, type Interval, type Timeframe } from '../../vaults/composition.js'
import { parseChainId, parseContractAddress } from '../../vaults/chain.js'
import { PAGE_SIZE } from '../../core/page.js'
import { REST_CURSOR } from '../../core/signed-cursor.js'
import { decodeVaultCursor } from '../../vaults/list.js'
import { notFound, quoted } from '../../core/errors.js'
import { choiceParam, limitParam, pathParam, segmentParam, textParam, timestampParam } from '../params.js'
import { defineRoute, type RestRoute } from '../route.js'
import { Amount, type CamelKeys, camelOf, component, page, Percent, selectionOf, snakeKeys, Timestamp } from '../wire.js'

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

/**
 * What a series echoes (decisions §14): its timeframe, or (timeframe null) the range's from, to
 * and interval, which a timeframe's answer leaves out.
 */
const seriesEcho = {
  timeframe: z.enum(TIMEFRAMES).nullable().meta({ description: 'The timeframe asked for; null for a range.' }),
  from: Timestamp.optional().meta({ description: "A range's from, as asked (only when a range was asked for)." }),
  to: Timestamp.optional().meta({ description: "A range's to, or the effective now when it was left out (only for a range)." }),
  interval: z
    .enum(INTERVALS)
    .optional()
    .meta({ description: "A range's step: the one asked for, or the smallest giving at most 1,000 points (only for a range)." }),
}

const CompositionSeriesSchema = component(
  'CompositionSeries',
  z.object({
    group_by: z.enum(GROUP_BYS),
    ...seriesEcho,
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

const ApyBasisEntry = component(
  'ApyBasis',
  z
    .object({
      from: Timestamp.meta({ description: 's0: the time of the snapshot the window starts from.' }),
      to: Timestamp.meta({ description: 's1: the time of the newest snapshot not flagged as a spike.' }),
      share_price_from: Amount.meta({ description: "s0's share price, exact." }),
      share_price_to: Amount.meta({ description: "s1's share price, exact." }),
    })
    .nullable()
    .meta({ description: 'The two snapshots an APY came from; null where the APY is null.' }),
)

/** The values VaultPerformance answers as they are (camelCase there); the APY windows are keyed differently (below). */
const PerformanceValues = z.object({
  as_of: Timestamp.nullable().meta({ description: "The newest snapshot's time; null while the vault has none (and so are the other values)." }),
  share_price: Amount.nullable().meta({ description: 'Of the newest snapshot, in base-asset units.' }),
  tvl: Amount.nullable().meta({ description: 'Of the newest snapshot, in base-asset units.' }),
  tvl_usd: Amount.nullable().meta({ description: 'tvl × the base asset USD price, exact; null when the price is unknown.' }),
})

const ApyWindows = component(
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
)

const PerformanceSchema = component(
  'VaultPerformance',
  z
    .object({
      vault_id: z.string(),
      ...PerformanceValues.shape,
      apy_pct: ApyWindows,
      apy_basis: component(
        'ApyBasisWindows',
        z.object({ '1d': ApyBasisEntry, '7d': ApyBasisEntry, '30d': ApyBasisEntry, '90d': ApyBasisEntry, '1y': ApyBasisEntry, inception: ApyBasisEntry }).meta({
          description:
            'Keyed like apy_pct: the s0 and s1 each APY came from. ((share_price_to / share_price_from)^(365 days / (to − from)) − 1) × 100, rounded to 6 decimals, is apy_pct.',
        }),
      ),
    })
    .meta({ description: "A vault's newest snapshot and realized APY windows (decisions §9), with their basis (§14)." }),
)

const PerformancePointSchema = component(
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
)

const PerformanceSeriesSchema = component(
  'PerformanceSeries',
  z.object({
    ...seriesEcho,
    points: z.array(PerformancePointSchema).meta({ description: 'Oldest first; none before the first snapshot (a vault without snapshots answers none).' }),
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
const seriesQuery = {
  timeframe: choiceParam(
    TIMEFRAMES,
    'The window, ending now: 7d (1-hour buckets), 30d (6-hour), 1y (1-day), all (1-week, Monday 00:00 UTC). Default 30d; not together with `from`.',
  ),
  from: timestampParam(
    'Start of a range instead of a timeframe (RFC 3339): the first point is the bucket holding it. Required when `to` or `interval` is given.',
    '2026-03-01T00:00:00.000Z',
  ),
  to: timestampParam('End of the range, exclusive (RFC 3339); default now. Buckets starting after now are left out.', '2026-04-01T00:00:00.000Z'),
  interval: choiceParam(
    INTERVALS,
    `The range's step, on the timeframes' UTC grid: 1h, 6h (00/06/12/18 h), 1d (midnight), 1w (Monday 00:00). Default: the smallest giving at most ${MAX_POINTS} points.`,
  ),
}
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

/** GraphQL values of `interval`. */
const INTERVAL_ENUM: Record<Interval, string> = { '1h': 'PT1H', '6h': 'PT6H', '1d': 'P1D', '1w': 'P1W' }
const INTERVAL_OF = Object.fromEntries(Object.entries(INTERVAL_ENUM).map(([k, v]) => [v, k])) as Record<string, Interval>
const TIMEFRAME_OF = Object.fromEntries(Object.entries(TIMEFRAME_ENUM).map(([k, v]) => [v, k])) as Record<string, Timeframe>

interface SeriesQuery {
  timeframe: Timeframe | undefined
  from: Date | undefined
  to: Date | undefined
  interval: Interval | undefined
}

/**
 * The series variables (`timeframe` or `range`) from the REST query. Checked here first (the same
 * rule as GraphQL's, src/vaults/composition.ts seriesRequest) so the message names REST's own
 * parameters; the rest (from before to, the point limit) is the resolver's, with the same names.
 */
function seriesVariables(query: SeriesQuery) {
  const request = seriesRequest(query)
  if ('timeframe' in request) return { timeframe: TIMEFRAME_ENUM[request.timeframe], range: null }
  return {
    timeframe: null,
    range: { from: request.from.toISOString(), to: request.to?.toISOString() ?? null, interval: request.interval && INTERVAL_ENUM[request.interval] },
  }
}

/** What the series fields echo, as GraphQL answers it. */
const SERIES_ECHO = 'timeframe from to interval'

interface SeriesEchoData {
  timeframe: string | null
  from: string | null
  to: string | null
  interval: string | null
}

/** A timeframe's answer names its timeframe; a range's says timeframe null and echoes from, to and interval (decisions §14). */
function echoBody(series: SeriesEchoData) {
  if (series.timeframe !== null) return { timeframe: TIMEFRAME_OF[series.timeframe]! }
  return { timeframe: null, from: series.from!, to: series.to!, interval: INTERVAL_OF[series.interval!]! }
}

interface SeriesData {
  vault: { compositionSeries: SeriesEchoData & { labels: string[]; points: { t: string; weightsPct: number[] }[] } } | null
}

function seriesBody(data: SeriesData, id: string, query: { group_by: GroupBy }): z.input<typeof CompositionSeriesSchema> {
  const series = found(data.vault, id).compositionSeries
  return {
    group_by: query.group_by,
    ...echoBody(series),
    labels: series.labels,
    points: snakeKeys<z.input<typeof CompositionSeriesSchema>['points']>(series.points),
  }
}

type ApyKey = keyof z.input<typeof ApyWindows>
const APY_KEYS = Object.keys(ApyWindows.shape) as ApyKey[]
/** The VaultPerformance field of an apy_pct key: `1d` → apy1d, `inception` → apyInception (GraphQL names cannot start with a digit). */
const apyField = <K extends ApyKey>(key: K) => `apy${key[0]!.toUpperCase()}${key.slice(1)}` as `apy${Capitalize<K>}`

type ApyBasisWire = NonNullable<z.input<typeof ApyBasisEntry>>

/** The GraphQL ApyWindow values, keyed by apy_pct key. */
const APY_WINDOW_ENUM: Record<ApyKey, string> = { '1d': 'P1D', '7d': 'P7D', '30d': 'P30D', '90d': 'P90D', '1y': 'P1Y', inception: 'INCEPTION' }
const APY_KEY_OF = Object.fromEntries(Object.entries(APY_WINDOW_ENUM).map(([k, v]) => [v, k])) as Record<string, ApyKey>

/** VaultPerformance's fields behind the wire's values, APY windows and their basis. */
const PERFORMANCE_SELECTION = `${selectionOf(PerformanceValues)} ${APY_KEYS.map(apyField).join(' ')} basis { window ${selectionOf(ApyBasisEntry)} }`

const VALUE_FIELDS = Object.keys(PerformanceValues.shape).map(camelOf) as (keyof CamelKeys<z.input<typeof PerformanceValues>>)[]

type PerformanceGraph = CamelKeys<z.input<typeof PerformanceValues>> & { [K in ApyKey as `apy${Capitalize<K>}`]: number | null } & {
  basis: (CamelKeys<ApyBasisWire> & { window: string })[]
}

interface PerformanceData {
  vault: { performance: PerformanceGraph } | null
}

function performanceBody(data: PerformanceData, id: string): z.input<typeof PerformanceSchema> {
  const p = found(data.vault, id).performance
  const values = Object.fromEntries(VALUE_FIELDS.map((f) => [f, p[f]])) as CamelKeys<z.input<typeof PerformanceValues>>
  const none = Object.fromEntries(APY_KEYS.map((k) => [k, null])) as Record<ApyKey, null>
  return {
    vault_id: id,
    ...snakeKeys<z.input<typeof PerformanceValues>>(values),
    apy_pct: Object.fromEntries(APY_KEYS.map((k) => [k, p[apyField(k)]])) as Record<ApyKey, number | null>,
    // Every window is present, null where GraphQL lists no basis.
    apy_basis: { ...none, ...Object.fromEntries(p.basis.map(({ window, ...b }) => [APY_KEY_OF[window]!, snakeKeys<ApyBasisWire>(b)])) },
  }
}

type PointWire = Required<z.input<typeof PerformancePointSchema>>

interface PerformanceSeriesData {
  vault: { performanceSeries: SeriesEchoData & { points: CamelKeys<PointWire>[] } } | null
}

function performanceSeriesBody(data: PerformanceSeriesData, id: string): z.input<typeof PerformanceSeriesSchema> {
  const series = found(data.vault, id).performanceSeries
  return {
    ...echoBody(series),
    // GraphQL answers `flags: []` on an unmarked point; the wire leaves the field out.
    points: snakeKeys<PointWire[]>(series.points).map(({ flags, ...point }) => (flags.length > 0 ? { ...point, flags } : point)),
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
    path: '/chains/:chain/vaults/:address',
    summary: 'Get a vault by chain and contract',
    description: 'The vault with this chain id and contract address (compared ignoring case): the same body as get_vault.',
    tags,
    params: {
      chain: pathParam('The chain id: decimal (8453) or CAIP-2 (eip155:8453).', '1', (text, name) => parseChainId(text, name)),
      address: pathParam('The contract address: 0x followed by 40 hex digits, in any case.', '0x1111111111111111111111111111111111111111', (text, name) =>
        parseContractAddress(text, name),
      ),
    },
    query: {},
    document: `query VaultByAddress($chainId: String!, $address: String!) { vaultByAddress(chainId: $chainId, address: $address) { ...VaultFields } } ${VAULT_FIELDS}`,
    variables: ({ params }) => ({ chainId: params.chain, address: params.address }),
    shape: (data: { vaultByAddress: VaultData | null }, { params }) => {
      if (data.vaultByAddress === null) throw notFound(`No vault on chain ${params.chain} has this contract address.`)
      return vaultBody(data.vaultByAddress)
    },
    response: VaultSchema,
    errors: ['bad_request', 'not_found'],
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
    description: `Group weights per bucket over a timeframe ending now, or over any range (from, to, interval; at most ${MAX_POINTS} points), on a fixed UTC grid; ready for a stacked area chart.`,
    tags,
    params: vaultParams,
    query: { ...seriesQuery, group_by: groupBy },
    document: `query CompositionSeries($id: ID!, $timeframe: CompositionTimeframe, $range: SeriesRange, $groupBy: CompositionGroupBy!) {
      vault(id: $id) { compositionSeries(timeframe: $timeframe, range: $range, groupBy: $groupBy) { ${SERIES_ECHO} labels points { t weightsPct } } }
    }`,
    variables: ({ params, query }) => ({ id: params.vault_id, ...seriesVariables(query), groupBy: query.group_by }),
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
      'The newest snapshot at or before now (or `at`): share price, TVL, USD TVL and the realized APY over 1 day, 7 days, 30 days, 90 days, 1 year and since inception, from share prices, with the two snapshots each APY came from (`apy_basis`). Snapshots whose share price moved more than SPIKE_PCT percent from the previous one are left out of the windows.',
    tags,
    params: vaultParams,
    query: {
      at: timestampParam(
        'Compute as of this time (RFC 3339): s1 is the newest snapshot at or before it (a time after now reads as now); with none, every nullable value is null.',
        '2026-03-01T00:00:00.000Z',
      ),
    },
    document: `query Performance($id: ID!, $at: DateTime) {
      vault(id: $id) {
        performance(at: $at) { ${PERFORMANCE_SELECTION} }
      }
    }`,
    variables: ({ params, query }) => ({ id: params.vault_id, at: query.at?.toISOString() }),
    shape: (data: PerformanceData, { params }) => performanceBody(data, params.vault_id),
    response: PerformanceSchema,
    errors: ['bad_request', 'not_found'],
    cache,
  }),
  defineRoute({
    method: 'GET',
    path: '/vaults/:vault_id/performance/series',
    summary: "Get a vault's share price, TVL and APY over time",
    description: `Per bucket of the composition series' grid (a timeframe ending now, or any range: from, to, interval; at most ${MAX_POINTS} points), the last snapshot taken before the bucket closed: share price, TVL, USD TVL and the 7-day APY as of that snapshot; spikes marked. Ready for line charts.`,
    tags,
    params: vaultParams,
    query: seriesQuery,
    document: `query PerformanceSeries($id: ID!, $timeframe: CompositionTimeframe, $range: SeriesRange) {
      vault(id: $id) { performanceSeries(timeframe: $timeframe, range: $range) { ${SERIES_ECHO} points { ${selectionOf(PerformancePointSchema)} } } }
    }`,
    variables: ({ params, query }) => ({ id: params.vault_id, ...seriesVariables(query) }),
    shape: (data: PerformanceSeriesData, { params }) => performanceSeriesBody(data, params.vault_id),
    response: PerformanceSeriesSchema,
    errors: ['bad_request', 'not_found'],
    cache,
  }),
]
