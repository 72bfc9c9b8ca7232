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
      if (query.cursor !== undefined) decodeVaultCursor({ chain: query.chain ?? null, status: query.status ?? null }, query.cursor, REST_CURSOR)
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
]
