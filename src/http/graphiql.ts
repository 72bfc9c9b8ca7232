import type { GraphiQLOptions } from 'graphql-yoga'

// GraphiQL opens with one tab per example operation, together covering every query and mutation
// (test/graphiql.test.ts checks that, and that each example validates against the schema).

/** Ids to put in the examples: the demo data's when it is loaded, placeholders otherwise. */
export interface ExampleIds {
  vaultId: string
  wallet: string
  walletVaultId: string
}

export const PLACEHOLDER_IDS: ExampleIds = {
  vaultId: 'usdc-prime',
  wallet: '0x0000000000000000000000000000000000000000',
  walletVaultId: 'usdc-prime',
}

/** Example ids from the demo data's hints (the wallet with an open position, when there is one). */
export function exampleIdsFromHints(hints: { vaultIds: string[]; wallets: { address: string; vaultId: string; note: string }[] }): ExampleIds {
  const wallet = hints.wallets.find((w) => w.note.startsWith('open position')) ?? hints.wallets[0]
  return {
    vaultId: hints.vaultIds[0] ?? PLACEHOLDER_IDS.vaultId,
    wallet: wallet?.address ?? PLACEHOLDER_IDS.wallet,
    walletVaultId: wallet?.vaultId ?? PLACEHOLDER_IDS.walletVaultId,
  }
}

export interface ExampleOperation {
  /** The operation's document; its first comment lines explain it. */
  query: string
  variables?: Record<string, unknown>
  headers?: Record<string, string>
}

export function exampleOperations(ids: ExampleIds = PLACEHOLDER_IDS): ExampleOperation[] {
  return [
    {
      query: `# A vault's metadata with live values, and its current composition.
# Amounts (tvl, sharePrice, …) are exact decimal strings; timestamps RFC 3339 UTC.
query Vault($id: ID!) {
  vault(id: $id) {
    id name chain chainId symbol baseAsset status tvl sharePrice perfFeeBps mgmtFeeBps
    contract { address }
    depositConstraints { maxDeposit minDeposit paused }
    withdrawConstraints { instantLiquidity instantSlippageMaxBps redeem24hThresholdPctOfAum redeem48hAboveThreshold }
    icons { dark light }
    apiEndpoint description docsUrl inceptionDate strategyBrief
    composition(groupBy: platform) { asOf positions { platform asset symbol pct apyEstPct icon } }
  }
}
`,
      variables: { id: ids.vaultId },
    },
    {
      query: `# Vaults by id, 1 to 200 per page; filter by chain and status.
# Next page: pass pageInfo.endCursor as $after while hasNextPage.
query Vaults($first: Int = 10, $after: String, $status: VaultStatus) {
  vaults(first: $first, after: $after, status: $status) {
    edges { node { id name chain status tvl sharePrice } }
    pageInfo { hasNextPage endCursor }
  }
}
`,
      variables: { first: 10, status: 'active' },
    },
    {
      query: `# Composition over time, ready for a stacked area chart: one weight per label per point.
# timeframe: P7D (hourly), P30D (6-hourly), P1Y (daily), ALL (weekly); groupBy: platform | asset.
query CompositionSeries($id: ID!, $timeframe: CompositionTimeframe = P30D, $groupBy: CompositionGroupBy = asset) {
  vault(id: $id) {
    id
    byAsset: composition(groupBy: asset) { asOf positions { asset pct apyEstPct } }
    compositionSeries(timeframe: $timeframe, groupBy: $groupBy) { groupBy timeframe labels points { t weightsPct } }
  }
}
`,
      variables: { id: ids.vaultId, timeframe: 'P30D', groupBy: 'asset' },
    },
    {
      query: `# A wallet: its transactions in one vault (newest first, paged), its pending redeems across
# vaults, its position summary in that vault, and all its open positions.
query Wallet($address: String!, $vaultId: ID!) {
  user(address: $address) {
    address
    transactions(vaultId: $vaultId, first: 20) {
      edges { node { id vaultId type status amount timestamp txHash } }
      pageInfo { hasNextPage endCursor }
    }
    pendingRedeems { asOf totalPending averageRedeemDelay pendingRedeems { vaultId amount submittedAt txHash } }
    position(vaultId: $vaultId) { vaultId shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned firstDepositAt }
    positions { vaultId shareBalance positionValueUsd }
  }
}
`,
      variables: { address: ids.wallet, vaultId: ids.walletVaultId },
    },
  ]
}

/** Yoga's GraphiQL options: the examples as tabs, the variables and headers panes open. */
export function graphiqlOptions(ids: ExampleIds = PLACEHOLDER_IDS): GraphiQLOptions {
  const tabs = exampleOperations(ids).map((e) => ({
    query: e.query,
    variables: e.variables ? JSON.stringify(e.variables, null, 2) : null,
    headers: e.headers ? JSON.stringify(e.headers, null, 2) : null,
  }))
  return {
    title: 'vaultgate GraphiQL',
    defaultTabs: tabs,
    defaultQuery: tabs[0]!.query,
    defaultEditorToolsVisibility: true,
    // Headers typed in GraphiQL may hold wallet-session tokens: keep them out of local storage.
    shouldPersistHeaders: false,
  }
}
