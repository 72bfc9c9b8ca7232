// What the benchmark asks: each scenario is a list of requests sent in rotation (so a read of
// "a vault" spreads over many vaults), the same for the gateway and both baselines.

export interface BenchRequest {
  method: 'GET' | 'POST'
  path: string
  body?: string
  headers?: Record<string, string>
}

export interface Scenario {
  id: string
  title: string
  requests: BenchRequest[]
  /** Also measured with the response cache on (public reads only). */
  cacheable: boolean
  /** No database-limit baseline (e.g. the cached key verification is not a database read). */
  noDbBaseline?: boolean
}

/** How the physical-limit server finds the recorded answer to a request. */
export const requestKey = (method: string, url: string, body: string) => `${method} ${url} ${body}`

export interface ScenarioData {
  vaultIds: string[]
  /** PostgreSQL dataset only: the wallet with a deep history in vaultIds[0], and its page-1,000 cursor. */
  history?: { address: string; vaultId: string; deepCursor: string }
  /** The wallet with a position in each of the first 20 vaults. */
  dashboardWallet?: string
  /** API keys to verify, and the INTERNAL_TOKEN of the gateway. */
  keys?: { rawKeys: string[]; internalToken: string }
}

const VAULT_FIELDS = `id name chain chainId symbol baseAsset status tvl sharePrice perfFeeBps mgmtFeeBps
  contract { address }
  depositConstraints { maxDeposit minDeposit paused }
  withdrawConstraints { instantLiquidity instantSlippageMaxBps redeem24hThresholdPctOfAum redeem48hAboveThreshold }
  icons { dark light }
  apiEndpoint description docsUrl inceptionDate strategyBrief`

export const VAULT_QUERY = `query BenchVault($id: ID!) {
  vault(id: $id) {
    ${VAULT_FIELDS}
    composition { asOf positions { platform asset symbol pct apyEstPct icon } }
  }
}`

const graphql = (query: string, operationName: string, variables: Record<string, unknown>): BenchRequest => ({
  method: 'POST',
  path: '/graphql',
  body: JSON.stringify({ query, operationName, variables }),
  headers: { 'content-type': 'application/json' },
})

export const DASHBOARD_QUERY = `query BenchDashboard($address: String!) {
  vaults(first: 20) {
    edges { node { id name chain status tvl sharePrice composition { asOf positions { platform asset symbol pct apyEstPct icon } } } }
  }
  user(address: $address) {
    positions(includeClosed: true) { vaultId shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned firstDepositAt }
  }
}`

/** A list of 50 vaults with their 7- and 30-day APY (docs/api/vaults.md "Performance history"). */
export const PERFORMANCE_LIST_QUERY = `query BenchPerformanceList {
  vaults(first: 50) { edges { node { id performance { apy7d apy30d } } } }
}`

export function scenarios(data: ScenarioData): Scenario[] {
  const list: Scenario[] = [
    {
      id: 'get_vault',
      title: 'REST get_vault',
      requests: data.vaultIds.map((id) => ({ method: 'GET', path: `/v1/vaults/${id}` })),
      cacheable: true,
    },
    {
      id: 'graphql_vault',
      title: 'GraphQL vault + composition',
      requests: data.vaultIds.map((id) => graphql(VAULT_QUERY, 'BenchVault', { id })),
      cacheable: true,
    },
    {
      id: 'series_1y',
      title: 'REST composition series 1y',
      requests: data.vaultIds.map((id) => ({ method: 'GET', path: `/v1/vaults/${id}/composition/series?timeframe=1y` })),
      cacheable: true,
    },
    {
      id: 'perf_series_all',
      title: 'REST performance series all',
      requests: data.vaultIds.map((id) => ({ method: 'GET', path: `/v1/vaults/${id}/performance/series?timeframe=all` })),
      cacheable: true,
    },
    {
      id: 'perf_series_1y',
      title: 'REST performance series 1y',
      requests: data.vaultIds.map((id) => ({ method: 'GET', path: `/v1/vaults/${id}/performance/series?timeframe=1y` })),
      cacheable: true,
    },
    {
      id: 'perf_list',
      title: 'GraphQL 50 vaults with 7d/30d APY',
      requests: [graphql(PERFORMANCE_LIST_QUERY, 'BenchPerformanceList', {})],
      cacheable: true,
    },
  ]
  if (data.dashboardWallet) {
    list.push({
      id: 'dashboard',
      title: 'GraphQL dashboard (20 vaults + positions)',
      requests: [graphql(DASHBOARD_QUERY, 'BenchDashboard', { address: data.dashboardWallet })],
      // Per-wallet: never cached; measured again as shipped to show the cache's pass-through cost.
      cacheable: true,
    })
  }
  if (data.history) {
    const base = `/v1/users/${data.history.address}/vaults/${data.history.vaultId}/transactions`
    list.push(
      { id: 'tx_first', title: 'REST transactions, first page', requests: [{ method: 'GET', path: base }], cacheable: false },
      {
        id: 'tx_deep',
        title: 'REST transactions, page 1,000',
        requests: [{ method: 'GET', path: `${base}?cursor=${data.history.deepCursor}` }],
        cacheable: false,
      },
    )
  }
  if (data.keys) {
    list.push({
      id: 'verify_key',
      title: 'POST /internal/v1/apiKey/verify',
      requests: data.keys.rawKeys.map((apiKey) => ({
        method: 'POST',
        path: '/internal/v1/apiKey/verify',
        body: JSON.stringify({ apiKey }),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${data.keys!.internalToken}` },
      })),
      // Phase 1 reads every key from the database (API_KEY_CACHE_TTL_MS=0); phase 2 is the 30 s key cache.
      cacheable: true,
    })
  }
  return list
}
