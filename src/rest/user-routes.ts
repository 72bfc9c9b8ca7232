import { parseAddress } from '../domain/address.js'
import { parseLimitParam, parseTypeParam } from '../domain/transaction-page.js'
import { notFound } from '../errors.js'
import type { RestRoute } from './shim.js'

// The wallet reads of spec §4 (decisions.md §4). Per-wallet data: never cached by shared caches
// (the shim's default `no-store`). Parameters are checked here so REST answers with the parameter's
// own name (`limit`, not GraphQL's `first`); the resolvers check them again for GraphQL callers.

interface TransactionNode {
  id: string
  vaultId: string
  type: string
  status: string
  amount: string
  timestamp: string
  txHash: string
}

interface TransactionsData {
  user: {
    transactions: {
      edges: { node: TransactionNode }[]
      pageInfo: { hasNextPage: boolean; endCursor: string | null }
    }
  }
}

const transactions: RestRoute<TransactionsData> = {
  method: 'GET',
  path: '/users/:address/vaults/:vault_id/transactions',
  document: `query UserTransactions($address: String!, $vaultId: ID!, $type: TransactionType, $first: Int, $after: String) {
    user(address: $address) {
      transactions(vaultId: $vaultId, type: $type, first: $first, after: $after) {
        edges { node { id vaultId type status amount timestamp txHash } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }`,
  variables: ({ params, query }) => ({
    address: parseAddress(params.address!),
    vaultId: params.vault_id,
    type: parseTypeParam(query.type),
    first: parseLimitParam(query.limit),
    after: query.cursor,
  }),
  shape: ({ user: { transactions: page } }) => ({
    items: page.edges.map(({ node }) => ({
      id: node.id,
      vault_id: node.vaultId,
      type: node.type,
      status: node.status,
      amount: node.amount,
      timestamp: node.timestamp,
      tx_hash: node.txHash,
    })),
    next_cursor: page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null,
  }),
}

interface RedeemsData {
  user: {
    pendingRedeems: {
      address: string
      asOf: string
      pendingRedeems: { vaultId: string; amount: string; submittedAt: string; transactionType: string; txHash: string }[]
      totalPending: string
      averageRedeemDelay: number
    }
  }
}

const redeems: RestRoute<RedeemsData> = {
  method: 'GET',
  path: '/users/:address/redeems',
  document: `query UserPendingRedeems($address: String!) {
    user(address: $address) {
      pendingRedeems {
        address asOf
        pendingRedeems { vaultId amount submittedAt transactionType txHash }
        totalPending averageRedeemDelay
      }
    }
  }`,
  variables: ({ params }) => ({ address: parseAddress(params.address!) }),
  shape: ({ user: { pendingRedeems: r } }) => ({
    address: r.address,
    as_of: r.asOf,
    pending_redeems: r.pendingRedeems.map((p) => ({
      vault_id: p.vaultId,
      amount: p.amount,
      submitted_at: p.submittedAt,
      transaction_type: p.transactionType,
      tx_hash: p.txHash,
    })),
    total_pending: r.totalPending,
    average_redeem_delay: r.averageRedeemDelay,
  }),
}

interface SummaryData {
  user: {
    position: {
      vaultId: string
      asOf: string
      shareBalance: string
      sharePrice: string
      positionValueUsd: string
      totalDeposits: string
      allTimeEarned: string
      firstDepositAt: string
    } | null
  }
}

const summary: RestRoute<SummaryData> = {
  method: 'GET',
  path: '/users/:address/vaults/:vault_id/summary',
  document: `query UserPositionSummary($address: String!, $vaultId: ID!) {
    user(address: $address) {
      position(vaultId: $vaultId) { vaultId asOf shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned firstDepositAt }
    }
  }`,
  variables: ({ params }) => ({ address: parseAddress(params.address!), vaultId: params.vault_id }),
  shape: ({ user: { position: p } }, { params }) => {
    if (p === null) throw notFound(`Wallet ${params.address!.toLowerCase()} has no completed deposit in vault ${params.vault_id}.`)
    return {
      vault_id: p.vaultId,
      as_of: p.asOf,
      share_balance: p.shareBalance,
      share_price: p.sharePrice,
      position_value_usd: p.positionValueUsd,
      total_deposits: p.totalDeposits,
      all_time_earned: p.allTimeEarned,
      first_deposit_at: p.firstDepositAt,
    }
  },
}

export const userRoutes: RestRoute[] = [transactions, redeems, summary]
