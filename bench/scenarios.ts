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

export function scenarios(data: ScenarioData): Scenario[] {
  return [
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
  ]
}
