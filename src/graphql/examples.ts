import type { GraphiQLOptions } from 'graphql-yoga'

// GraphiQL opens with one document of example operations, together covering every query and
// mutation (test/graphql/graphiql.test.ts checks that, and that each one validates and runs). One document
// rather than one tab each: the bundled GraphiQL does not load a default tab's variables, nor
// refresh its editors when switching between default tabs. So the examples take literal
// arguments, and the run button asks which operation to run.

/** Ids to put in the examples: the demo data's when it is loaded, placeholders otherwise. */
export interface ExampleIds {
  vaultId: string
  wallet: string
  walletVaultId: string
  /** A vault's chain id and contract address, for vaultByAddress (a placeholder that finds nothing when absent). */
  contract?: { chainId: string; address: string }
}

export const PLACEHOLDER_IDS: ExampleIds = {
  vaultId: 'usdc-prime',
  wallet: '0x0000000000000000000000000000000000000000',
  walletVaultId: 'usdc-prime',
}

const PLACEHOLDER_CONTRACT = { chainId: '1', address: '0x0000000000000000000000000000000000000000' }

/** Example ids from the demo data's hints (the wallet with an open position, when there is one). */
export function exampleIdsFromHints(hints: {
  vaultIds: string[]
  wallets: { address: string; vaultId: string; note: string }[]
  contract?: { chainId: string; address: string }
}): ExampleIds {
  const wallet = hints.wallets.find((w) => w.note.startsWith('open position')) ?? hints.wallets[0]
  const ids: ExampleIds = {
    vaultId: hints.vaultIds[0] ?? PLACEHOLDER_IDS.vaultId,
    wallet: wallet?.address ?? PLACEHOLDER_IDS.wallet,
    walletVaultId: wallet?.vaultId ?? PLACEHOLDER_IDS.walletVaultId,
  }
  if (hints.contract) ids.contract = { chainId: hints.contract.chainId, address: hints.contract.address }
  return ids
}

export interface ExampleOperation {
  /** One named operation with literal arguments; its comment lines explain it. */
  query: string
  /** Request headers it needs (documented in its comments: GraphiQL's Headers pane). */
  headers?: Record<string, string>
}

// Key management acts for the wallet of the caller's wallet session, so these need headers.
const SESSION_HEADERS = { Authorization: 'Bearer <WALLET_SESSION_JWT>' }
const SESSION_HELP = `# Needs a wallet session: open Headers (below) and enter
#   {"Authorization": "Bearer <WALLET_SESSION_JWT>"}
# with the JWT of your embedded-wallet identity provider. If
# the token holds several EVM wallets, add the one to act for:
#   "X-Service-Wallet": "0x…"
# The wallet must be on the allowlist.`

const SESSION_SHORT = `# Headers: {"Authorization": "Bearer <WALLET_SESSION_JWT>"},
# plus "X-Service-Wallet": "0x…" when the token holds several
# EVM wallets (see ApiKey above).`

const apiKeyExamples: ExampleOperation[] = [
  {
    query: `# The caller's active API key (null when it has none).
${SESSION_HELP}
query ApiKey {
  apiKey { id keyPrefix name allowedCidrs createdAtMs expiresAtMs expiresInMs lastUsedAtMs revokedAtMs }
}
`,
    headers: SESSION_HEADERS,
  },
  {
    query: `# Creates an API key for the order exchange, revoking the
# previous one. apiKey (the raw key) is shown this once: keep it
# in a server-side secret store.
${SESSION_SHORT}
mutation CreateApiKey {
  createApiKey(keyPrefix: "my-desk", name: "Desk 1", allowedCidrs: ["203.0.113.0/24"]) {
    id keyPrefix name allowedCidrs createdAtMs expiresAtMs apiKey
  }
}
`,
    headers: SESSION_HEADERS,
  },
  {
    query: `# Revokes the caller's key; revoked is false when it had none.
${SESSION_SHORT}
mutation RevokeApiKey {
  revokeApiKey { revoked }
}
`,
    headers: SESSION_HEADERS,
  },
  {
    query: `# The caller's key history, newest first: created, revoked,
# replaced, disabled (allowlist removal) and expired entries.
${SESSION_SHORT}
query ApiKeyEvents {
  apiKeyEvents(first: 20) {
    edges { node { type keyId keyPrefix atMs } }
    pageInfo { hasNextPage endCursor }
  }
}
`,
    headers: SESSION_HEADERS,
  },
  {
    query: `# Verifications of the caller's keys per key and UTC day,
# by outcome (kept 90 days).
${SESSION_SHORT}
query ApiKeyUsage {
  apiKeyUsage(days: 7) {
    since
    items { day keyId keyPrefix name total counts { active revoked expired notWhitelisted ipNotAllowed } }
  }
}
`,
    headers: SESSION_HEADERS,
  },
]

/**
 * What a dashboard reads first (issue 30): a vault table sorted by USD value with APYs, a search
 * box, and one vault's performance chart. First in the document, so GraphiQL opens on them.
 */
function dashboardExamples(ids: ExampleIds): ExampleOperation[] {
  return [
    {
      query: `# A dashboard's vault table: the largest vaults by TVL in USD,
# with realized APYs (percent, net of fees; null while the
# history is too short, never 0). orderBy: tvl, tvlUsd, apy7d,
# apy30d; direction: desc (default) or asc.
query VaultTable {
  vaults(first: 20, orderBy: { field: tvlUsd, direction: desc }) {
    edges { node { id name chain baseAsset status tvl tvlUsd sharePrice performance { asOf apy1d apy7d apy30d apy90d apy1y apyInception } } }
    pageInfo { hasNextPage endCursor }
  }
}
`,
    },
    {
      query: `# A vault's performance chart: share price, TVL (in base asset
# and USD) and 7-day APY per bucket, oldest first, with the
# newest snapshot's values. timeframe: P7D (hourly), P30D
# (6-hourly), P1Y (daily), ALL (weekly). A point flagged
# "spike" is left out of the APY windows.
query Performance {
  vault(id: ${JSON.stringify(ids.vaultId)}) {
    id name tvlUsd
    performance { asOf sharePrice tvl tvlUsd apy7d apy30d apyInception }
    performanceSeries(timeframe: P30D) { timeframe points { t sharePrice tvl tvlUsd apy7dPct flags } }
  }
}
`,
    },
    {
      query: `# A search box: vaults whose id, name or symbol contains the
# text (any case), best 7-day APY first.
query SearchVaults {
  vaults(search: "usd", orderBy: { field: apy7d }, first: 10) {
    edges { node { id name symbol chain tvlUsd performance { apy7d } } }
  }
}
`,
    },
  ]
}

export function exampleOperations(ids: ExampleIds = PLACEHOLDER_IDS): ExampleOperation[] {
  const contract = ids.contract ?? PLACEHOLDER_CONTRACT
  return [
    ...dashboardExamples(ids),
    {
      query: `# A vault's metadata with live values and its current composition.
# Amounts (tvl, sharePrice, …) are exact decimal strings;
# timestamps are RFC 3339 UTC.
query Vault {
  vault(id: ${JSON.stringify(ids.vaultId)}) {
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
    },
    {
      query: `# Vaults by id, 1 to 200 per page; filter by chain and status.
# Next page: pageInfo.endCursor as \`after\` while hasNextPage.
query Vaults {
  vaults(first: 10, status: active) {
    edges { node { id name chain status tvl sharePrice } }
    pageInfo { hasNextPage endCursor }
  }
}
`,
    },
    {
      query: `# Composition over time, ready for a stacked area chart:
# one weight per label per point. timeframe: P7D (hourly),
# P30D (6-hourly), P1Y (daily), ALL (weekly);
# groupBy: platform | asset.
query CompositionSeries {
  vault(id: ${JSON.stringify(ids.vaultId)}) {
    id
    byAsset: composition(groupBy: asset) { asOf positions { asset pct apyEstPct } }
    compositionSeries(timeframe: P30D, groupBy: asset) { groupBy timeframe labels points { t weightsPct } }
  }
}
`,
    },
    {
      query: `# A vault by its chain and contract: chainId decimal (8453) or
# CAIP-2 (eip155:8453), the address in any case (null when
# no vault has them); caip10 is its CAIP-10 id with the
# EIP-55 checksum.
query VaultByAddress {
  vaultByAddress(chainId: ${JSON.stringify(`eip155:${contract.chainId}`)}, address: ${JSON.stringify(contract.address)}) {
    id name chainId caip10 contract { address }
  }
}
`,
    },
    {
      query: `# Any range and step: share price, TVL and 7-day APY per
# bucket from \`from\` to \`to\` (default now), interval PT1H,
# PT6H, P1D or P1W (default: the smallest giving at most
# 1,000 points), on the timeframes' UTC grid. performance(at:)
# computes the APYs as of a time; basis shows the two share
# prices and times each APY came from.
query PerformanceRange {
  vault(id: ${JSON.stringify(ids.vaultId)}) {
    id
    performanceSeries(range: { from: "2026-10-01T00:00:00.000Z", to: "2026-11-01T00:00:00.000Z", interval: P1D }) {
      from to interval points { t sharePrice tvl tvlUsd apy7dPct flags }
    }
    performance(at: "2026-11-01T00:00:00.000Z") {
      asOf sharePrice apy7d apy30d basis { window from to sharePriceFrom sharePriceTo }
    }
    compositionSeries(range: { from: "2026-10-01T00:00:00.000Z", interval: P1W }, groupBy: platform) { from to interval labels points { t weightsPct } }
  }
}
`,
    },
    {
      query: `# A wallet: its transactions in one vault (newest first,
# paged), its pending redeems across vaults, its position
# summary in that vault, and all its open positions.
query Wallet {
  user(address: ${JSON.stringify(ids.wallet)}) {
    address
    transactions(vaultId: ${JSON.stringify(ids.walletVaultId)}, first: 20) {
      edges { node { id vaultId type status amount timestamp txHash } }
      pageInfo { hasNextPage endCursor }
    }
    pendingRedeems { asOf totalPending averageRedeemDelay pendingRedeems { vaultId amount submittedAt txHash } }
    position(vaultId: ${JSON.stringify(ids.walletVaultId)}) { vaultId shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned firstDepositAt }
    positions { vaultId shareBalance positionValueUsd }
  }
}
`,
    },
    {
      query: `# A wallet across vaults: its latest transactions in every
# vault (newest first, paged; vaultId narrows it), its open
# positions, and its redeem queue: each pending redeem's place,
# the amount ahead of it and its ETA (p50/p90), the claimable
# ones ready to claim.
query WalletAcrossVaults {
  user(address: ${JSON.stringify(ids.wallet)}) {
    address
    asOf
    transactions(first: 20) {
      edges { node { id vaultId type status amount timestamp txHash } }
      pageInfo { hasNextPage endCursor }
    }
    positions(includeClosed: false) { vaultId shareBalance positionValueUsd allTimeEarned }
    pendingRedeems {
      totalPending totalClaimable averageRedeemDelay
      pendingRedeems { vaultId amount submittedAt status queuePosition amountAhead eta { p50 p90 } }
    }
  }
}
`,
    },
    {
      query: `# How old the data is (the Data-As-Of header of reads), the
# last import, and each followed chain's state.
query Meta {
  meta { dataAsOf lastImportAt stale sources { name chain chainId vaultIds headBlock syncedBlock lagBlocks syncedAt lastSuccessAt } }
}
`,
    },
    ...apiKeyExamples,
    ...subscriptionExamples(ids),
  ]
}

/** Subscriptions (docs/push.md): GraphiQL keeps the stream open and shows each event. */
function subscriptionExamples(ids: ExampleIds): ExampleOperation[] {
  return [
    {
      query: `# Live: the vault after each change (an import, the chain
# source), from any instance. Runs until you stop it; over SSE
# elsewhere: POST /graphql with Accept: text/event-stream.
subscription VaultUpdated {
  vaultUpdated(id: ${JSON.stringify(ids.vaultId)}) { id tvl sharePrice status composition { asOf } }
}
`,
    },
    {
      query: `# Live: each transaction of the wallet added or updated (a
# redeem claimable or completed), in any vault.
subscription WalletActivity {
  walletActivity(address: ${JSON.stringify(ids.wallet)}) { id vaultId type status amount timestamp txHash }
}
`,
    },
    {
      query: `# Live: the caller's key created, revoked, replaced, disabled
# or expired, as its history entry.
${SESSION_SHORT}
subscription ApiKeyChanged {
  apiKeyChanged { type keyId keyPrefix atMs }
}
`,
      headers: SESSION_HEADERS,
    },
  ]
}

const INTRO = `# vaultgate: example operations for every query, mutation and
# subscription.
# Run one: the run button, then its name (or Ctrl-Enter with
# the cursor inside it). Field descriptions: the Docs button
# on the left. The REST reference: /docs.
`

/** The document GraphiQL opens with: every example operation. */
export function exampleDocument(ids: ExampleIds = PLACEHOLDER_IDS): string {
  return [INTRO, ...exampleOperations(ids).map((e) => e.query)].join('\n')
}

/** Yoga's GraphiQL options: the examples in the editor, the variables and headers pane open. */
export function graphiqlOptions(ids: ExampleIds = PLACEHOLDER_IDS): GraphiQLOptions {
  return {
    title: 'vaultgate GraphiQL',
    defaultQuery: exampleDocument(ids),
    defaultEditorToolsVisibility: 'headers',
    // Headers typed in GraphiQL may hold wallet-session tokens: keep them out of local storage.
    shouldPersistHeaders: false,
    // GraphiQL subscribes with GET and Accept: text/event-stream (docs/push.md): the CSRF
    // rule for GET requests (src/graphql/protection.ts) asks for this header, which a page of
    // another site cannot send without a preflight.
    additionalHeaders: { 'X-GraphQL-CSRF': '1' },
  }
}
