import { z } from 'zod'
import { parseAddress } from '../../wallets/address.js'
import { PAGE_LIMIT, parseLimitParam, parseTypeParam, TRANSACTION_TYPES } from '../../wallets/history-cursor.js'
import { notFound } from '../../core/errors.js'
import type { Param } from '../params.js'
import { defineRoute, type RestRoute } from '../route.js'
import { Amount, component, Timestamp } from '../wire.js'

// The wallet reads of spec §4 (decisions.md §4). Per-wallet data: never cached by shared caches
// (the shim's default `no-store`). Parameters are checked here so REST answers with the parameter's
// own name (`limit`, not GraphQL's `first`); the resolvers check them again for GraphQL callers.

const TRANSACTION_STATUSES = ['pending', 'completed', 'failed', 'cancelled'] as const

const address: Param<string> = {
  description: 'A wallet address: 0x and 40 hex digits, any case (answers use lowercase).',
  schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' },
  example: '0x8ba1f109551bd432803012645ac136ddd64dba72',
  parse: (text) => parseAddress(text ?? ''),
}
const vaultId: Param<string> = { description: 'The vault id.', schema: { type: 'string', minLength: 1 }, example: 'usdc-prime', parse: (text) => text ?? '' }
const tags = ['Wallets']

const TransactionSchema = component(
  'Transaction',
  z.object({
    id: z.string(),
    vault_id: z.string(),
    type: z.enum(TRANSACTION_TYPES as [string, ...string[]]),
    status: z.enum(TRANSACTION_STATUSES),
    amount: Amount.meta({ description: 'In base-asset units.' }),
    timestamp: Timestamp.meta({ description: 'When the transaction was submitted.' }),
    tx_hash: z.string(),
  }),
)

const TransactionList = component(
  'TransactionList',
  z.object({
    items: z.array(TransactionSchema).meta({ description: 'Newest first (timestamp, then id, descending).' }),
    next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  }),
)

const PendingRedeemsSchema = component(
  'PendingRedeems',
  z.object({
    address: z.string(),
    as_of: Timestamp.meta({ description: 'The time of the request.' }),
    pending_redeems: z
      .array(
        component(
          'PendingRedeem',
          z.object({ vault_id: z.string(), amount: Amount, submitted_at: Timestamp, transaction_type: z.literal('redeem'), tx_hash: z.string() }),
        ),
      )
      .meta({ description: 'Oldest first.' }),
    total_pending: Amount.meta({ description: 'Exact sum of the pending amounts.' }),
    average_redeem_delay: z.int().min(0).meta({
      description: 'Seconds, rounded down: mean submission-to-completion time of redeems completed in the last 90 days in the vaults where this wallet has pending redeems; 0 without history.',
    }),
  }),
)

const PositionSummarySchema = component(
  'PositionSummary',
  z.object({
    vault_id: z.string(),
    as_of: Timestamp.meta({ description: 'The time of the request.' }),
    share_balance: Amount,
    share_price: Amount,
    position_value_usd: Amount.meta({ description: 'share_balance × share_price × the base asset USD price; USD.' }),
    total_deposits: Amount,
    all_time_earned: Amount.meta({ description: 'Negative when the position lost money.' }),
    first_deposit_at: Timestamp,
  }),
)

interface TransactionNode {
  id: string
  vaultId: string
  type: (typeof TRANSACTION_TYPES)[number]
  status: (typeof TRANSACTION_STATUSES)[number]
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

const transactions = defineRoute({
  method: 'GET',
  path: '/users/:address/vaults/:vault_id/transactions',
  summary: "List a wallet's transactions in a vault",
  description: 'Newest first, one page at a time. An unknown vault is a 404; a cursor we did not issue, or issued for another filter, is a 400.',
  tags,
  params: { address, vault_id: vaultId },
  query: {
    type: { description: 'Only transactions of this type.', schema: { type: 'string', enum: [...TRANSACTION_TYPES] }, parse: parseTypeParam } satisfies Param,
    limit: {
      description: 'Transactions per page.',
      schema: { type: 'integer', minimum: PAGE_LIMIT.min, maximum: PAGE_LIMIT.max, default: PAGE_LIMIT.default },
      parse: parseLimitParam,
    } satisfies Param,
    cursor: { description: 'The `next_cursor` of the previous page.', schema: { type: 'string' }, parse: (text: string | undefined) => text } satisfies Param,
  },
  response: TransactionList,
  errors: ['bad_request', 'not_found'],
  document: `query UserTransactions($address: String!, $vaultId: ID!, $type: TransactionType, $first: Int, $after: String) {
    user(address: $address) {
      transactions(vaultId: $vaultId, type: $type, first: $first, after: $after) {
        edges { node { id vaultId type status amount timestamp txHash } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }`,
  variables: ({ params, query }) => ({ address: params.address, vaultId: params.vault_id, type: query.type, first: query.limit, after: query.cursor }),
  shape: ({ user: { transactions: page } }: TransactionsData) => ({
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
})

interface RedeemsData {
  user: {
    pendingRedeems: {
      address: string
      asOf: string
      pendingRedeems: { vaultId: string; amount: string; submittedAt: string; transactionType: 'redeem'; txHash: string }[]
      totalPending: string
      averageRedeemDelay: number
    }
  }
}

const redeems = defineRoute({
  method: 'GET',
  path: '/users/:address/redeems',
  summary: "Get a wallet's pending redeems",
  description: 'Redeems still pending across vaults, their total, and the recent average time a redeem took.',
  tags,
  params: { address },
  query: {},
  response: PendingRedeemsSchema,
  errors: ['bad_request'],
  document: `query UserPendingRedeems($address: String!) {
    user(address: $address) {
      pendingRedeems {
        address asOf
        pendingRedeems { vaultId amount submittedAt transactionType txHash }
        totalPending averageRedeemDelay
      }
    }
  }`,
  variables: ({ params }) => ({ address: params.address }),
  shape: ({ user: { pendingRedeems: r } }: RedeemsData) => ({
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
})

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

const summary = defineRoute({
  method: 'GET',
  path: '/users/:address/vaults/:vault_id/summary',
  summary: "Get a wallet's position in a vault",
  description: 'Share balance, value and earnings from the wallet\'s transactions in the vault. 404 for an unknown vault, or when the wallet never completed a deposit there.',
  tags,
  params: { address, vault_id: vaultId },
  query: {},
  response: PositionSummarySchema,
  errors: ['bad_request', 'not_found'],
  document: `query UserPositionSummary($address: String!, $vaultId: ID!) {
    user(address: $address) {
      position(vaultId: $vaultId) { vaultId asOf shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned firstDepositAt }
    }
  }`,
  variables: ({ params }) => ({ address: params.address, vaultId: params.vault_id }),
  shape: ({ user: { position: p } }: SummaryData, { params }) => {
    if (p === null) throw notFound(`Wallet ${params.address} has no completed deposit in vault ${params.vault_id}.`)
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
})

export const userRoutes: RestRoute[] = [transactions, redeems, summary]
