import { GROUP_BYS, TIMEFRAMES, type GroupBy, type Timeframe } from '../domain/composition.js'
import { PAGE_SIZE } from '../domain/vaults.js'
import { notFound } from '../errors.js'
import { parseChoice, parseLimit, parseText } from './params.js'
import type { RestRoute } from './shim.js'

// Vault reads: public and slow to change, so shared caches may keep them for a few seconds.
const cache = { scope: 'public', maxAgeSeconds: 10 } as const

const VAULT_FIELDS = `fragment VaultFields on Vault {
  id name chain chainId symbol baseAsset status tvl sharePrice perfFeeBps mgmtFeeBps
  contract { address }
  depositConstraints { maxDeposit minDeposit paused }
  withdrawConstraints { instantLiquidity instantSlippageMaxBps redeem24hThresholdPctOfAum redeem48hAboveThreshold }
  icons { dark light }
  apiEndpoint description docsUrl inceptionDate strategyBrief
}`

type Nullable<T> = { [K in keyof T]: T[K] | null }

interface VaultData {
  id: string
  name: string
  chain: string
  chainId: string | null
  symbol: string
  baseAsset: string
  status: string
  tvl: string
  sharePrice: string
  perfFeeBps: number
  mgmtFeeBps: number | null
  contract: { address: string }
  depositConstraints: Nullable<{ maxDeposit: string; minDeposit: string; paused: boolean }>
  withdrawConstraints: Nullable<{ instantLiquidity: boolean; instantSlippageMaxBps: number; redeem24hThresholdPctOfAum: number; redeem48hAboveThreshold: boolean }>
  icons: Nullable<{ dark: string; light: string }>
  apiEndpoint: string
  description: string | null
  docsUrl: string | null
  inceptionDate: string | null
  strategyBrief: string | null
}

/** The spec's Vault (§2), every field present. */
const vaultBody = (v: VaultData) => ({
  id: v.id,
  name: v.name,
  chain: v.chain,
  chain_id: v.chainId,
  symbol: v.symbol,
  base_asset: v.baseAsset,
  status: v.status,
  tvl: v.tvl,
  share_price: v.sharePrice,
  perf_fee_bps: v.perfFeeBps,
  mgmt_fee_bps: v.mgmtFeeBps,
  contract: { address: v.contract.address },
  deposit_constraints: {
    max_deposit: v.depositConstraints.maxDeposit,
    min_deposit: v.depositConstraints.minDeposit,
    paused: v.depositConstraints.paused,
  },
  withdraw_constraints: {
    instant_liquidity: v.withdrawConstraints.instantLiquidity,
    instant_slippage_max_bps: v.withdrawConstraints.instantSlippageMaxBps,
    redeem_24h_threshold_pct_of_aum: v.withdrawConstraints.redeem24hThresholdPctOfAum,
    redeem_48h_above_threshold: v.withdrawConstraints.redeem48hAboveThreshold,
  },
  icons: { dark: v.icons.dark, light: v.icons.light },
  api_endpoint: v.apiEndpoint,
  description: v.description,
  docs_url: v.docsUrl,
  inception_date: v.inceptionDate,
  strategy_brief: v.strategyBrief,
})

function found<T>(vault: T | null, id: string): T {
  if (vault === null) throw notFound(`Vault "${id}" was not found.`)
  return vault
}

/** REST values of `timeframe` and their GraphQL enum names. */
const TIMEFRAME_ENUM: Record<Timeframe, string> = { '7d': 'P7D', '30d': 'P30D', '1y': 'P1Y', all: 'ALL' }

type Query = Record<string, string | undefined>
const groupByOf = (query: Query): GroupBy => parseChoice('group_by', query.group_by, GROUP_BYS, 'platform')
const timeframeOf = (query: Query): Timeframe => parseChoice('timeframe', query.timeframe, TIMEFRAMES, '30d')

interface ListData {
  vaults: { edges: { node: VaultData }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } }
}

const listBody = ({ vaults }: ListData) => ({
  items: vaults.edges.map((e) => vaultBody(e.node)),
  next_cursor: vaults.pageInfo.hasNextPage ? vaults.pageInfo.endCursor : null,
})

interface CompositionData {
  vault: { composition: { asOf: string; positions: { platform: string; asset: string; symbol: string; pct: number; apyEstPct: number; icon: string }[] } | null } | null
}

function compositionBody(data: CompositionData, id: string) {
  const composition = found(data.vault, id).composition
  if (composition === null) throw notFound(`Vault "${id}" has no composition snapshot yet.`)
  return {
    as_of: composition.asOf,
    positions: composition.positions.map((p) => ({ platform: p.platform, asset: p.asset, symbol: p.symbol, pct: p.pct, apy_est_pct: p.apyEstPct, icon: p.icon })),
  }
}

interface SeriesData {
  vault: { compositionSeries: { labels: string[]; points: { t: string; weightsPct: number[] }[] } } | null
}

function seriesBody(data: SeriesData, id: string, query: Query) {
  const series = found(data.vault, id).compositionSeries
  return {
    group_by: groupByOf(query),
    timeframe: timeframeOf(query),
    labels: series.labels,
    points: series.points.map((p) => ({ t: p.t, weights_pct: p.weightsPct })),
  }
}

/** GET /v1/vaults… : each row a fixed GraphQL document, its variables from the request, its result reshaped. */
export const vaultRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/vaults',
    document: `query Vaults($first: Int!, $after: String, $chain: String, $status: VaultStatus) {
      vaults(first: $first, after: $after, chain: $chain, status: $status) { edges { node { ...VaultFields } } pageInfo { hasNextPage endCursor } }
    } ${VAULT_FIELDS}`,
    variables: ({ query }) => ({
      first: parseLimit(query.limit, PAGE_SIZE),
      after: parseText('cursor', query.cursor),
      chain: parseText('chain', query.chain),
      status: parseChoice('status', query.status, ['active', 'paused', 'closed']),
    }),
    shape: (data: ListData) => listBody(data),
    cache,
  },
  {
    method: 'GET',
    path: '/vaults/:vault_id',
    document: `query Vault($id: ID!) { vault(id: $id) { ...VaultFields } } ${VAULT_FIELDS}`,
    variables: ({ params }) => ({ id: params.vault_id }),
    shape: (data: { vault: VaultData | null }, { params }) => vaultBody(found(data.vault, params.vault_id!)),
    cache,
  },
  {
    method: 'GET',
    path: '/vaults/:vault_id/composition',
    document: `query Composition($id: ID!, $groupBy: CompositionGroupBy!) {
      vault(id: $id) { composition(groupBy: $groupBy) { asOf positions { platform asset symbol pct apyEstPct icon } } }
    }`,
    variables: ({ params, query }) => ({ id: params.vault_id, groupBy: groupByOf(query) }),
    shape: (data: CompositionData, { params }) => compositionBody(data, params.vault_id!),
    cache,
  },
  {
    method: 'GET',
    path: '/vaults/:vault_id/composition/series',
    document: `query CompositionSeries($id: ID!, $timeframe: CompositionTimeframe!, $groupBy: CompositionGroupBy!) {
      vault(id: $id) { compositionSeries(timeframe: $timeframe, groupBy: $groupBy) { labels points { t weightsPct } } }
    }`,
    variables: ({ params, query }) => ({ id: params.vault_id, timeframe: TIMEFRAME_ENUM[timeframeOf(query)], groupBy: groupByOf(query) }),
    shape: (data: SeriesData, { params, query }) => seriesBody(data, params.vault_id!, query),
    cache,
  },
]
