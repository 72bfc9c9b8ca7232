import { z } from 'zod'
import { TransactionStatus, TransactionType } from '../../generated/prisma/enums.js'
import { EVM_ADDRESS, parseAddress } from '../../wallets/address.js'
import { PAGE_SIZE } from '../../core/page.js'
import { REST_CURSOR } from '../../core/signed-cursor.js'
import { decodeCursor, parseTypeParam, TRANSACTION_TYPES } from '../../wallets/history-cursor.js'
import { notFound, quoted } from '../../core/errors.js'
import { choiceParam, limitParam, textParam, type Param } from '../params.js'
import { defineRoute, type RestRoute } from '../route.js'
import { Amount, type CamelKeys, component, page, selectionOf, snakeKeys, Timestamp } from '../wire.js'

// The wallet reads of spec §4 (docs/spec/decisions.md §4). Per-wallet data: never cached by shared caches
// (the shim's default `no-store`). Parameters are checked here so REST answers with the parameter's
// own name (`limit`, not GraphQL's `first`); the resolvers check them again for GraphQL callers.

const address: Param<string> = {
  description: 'A wallet address: 0x and 40 hex digits, any case (answers use lowercase).',
  schema: { type: 'string', pattern: EVM_ADDRESS.source },
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
    type: z.enum(TransactionType),
    status: z.enum(TransactionStatus),
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
    as_of: Timestamp.meta({
      description:
        "The time of the newest data used: the newest snapshot or transaction time of the vaults it is computed from (the gateway's `data_as_of`, GET /v1/status, when there are none), as in the Data-As-Of header; the request time only while the gateway holds no data.",
    }),
    pending_redeems: z
      .array(
        component(
          'PendingRedeem',
          z.object({
            vault_id: z.string(),
            amount: Amount,
            submitted_at: Timestamp,
            transaction_type: z.literal('redeem'),
            tx_hash: z.string(),
            status: z.enum(['pending', 'claimable']).meta({ description: '`pending` (in the queue) or `claimable` (the assets are ready to claim).' }),
            queue_position: z
              .int()
              .min(1)
              .nullable()
              .meta({ description: "1-based place among the vault's pending redeems by submission time (then id); null when claimable." }),
            amount_ahead: Amount.nullable().meta({ description: 'Sum of the pending amounts ahead of this one in its vault; null when claimable.' }),
            eta: component(
              'RedeemEta',
              z.object({ p50: Timestamp, p90: Timestamp }).meta({
                description:
                  "When the redeem should be paid: its submission time plus the 50th / 90th percentile (nearest rank, whole seconds) of its vault's submission-to-completion delays over the last 90 days.",
              }),
            )
              .nullable()
              .meta({ description: 'Null when claimable, or when no redeem completed in the vault in the last 90 days.' }),
          }),
        ),
      )
      .meta({ description: 'Pending and claimable redeems, oldest first.' }),
    total_pending: Amount.meta({ description: 'Exact sum of the pending amounts (claimable ones not included).' }),
    total_claimable: Amount.meta({ description: 'Exact sum of the claimable amounts.' }),
    average_redeem_delay: z.int().min(0).meta({
      description:
        'Seconds, rounded down: mean submission-to-completion time of redeems completed in the last 90 days in the vaults where this wallet has pending redeems; 0 without history.',
    }),
  }),
)

const PositionSummarySchema = component(
  'PositionSummary',
  z.object({
    vault_id: z.string(),
    as_of: Timestamp.meta({
      description:
        "The time of the newest data used: the newest snapshot or transaction time of the vaults it is computed from (the gateway's `data_as_of`, GET /v1/status, when there are none), as in the Data-As-Of header; the request time only while the gateway holds no data.",
    }),
    share_balance: Amount,
    share_price: Amount,
    position_value_usd: Amount.nullable().meta({
      description: 'share_balance × share_price × the base asset USD price; USD. Null while that price is unknown.',
    }),
    total_deposits: Amount,
    all_time_earned: Amount.meta({ description: 'Negative when the position lost money.' }),
    first_deposit_at: Timestamp,
  }),
)

type TransactionWire = z.input<typeof TransactionSchema>

interface TransactionsData {
  user: { transactions: { edges: { node: CamelKeys<TransactionWire> }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } }
}

const historyQuery = {
  type: { description: 'Only transactions of this type.', schema: { type: 'string', enum: [...TRANSACTION_TYPES] }, parse: parseTypeParam } satisfies Param,
  limit: limitParam(PAGE_SIZE, 'Transactions per page.'),
  cursor: { description: 'The `next_cursor` of the previous page.', schema: { type: 'string' }, parse: (text: string | undefined) => text } satisfies Param,
}

/** A history page's document; `name` is the route's operation (its OpenAPI operationId). */
const historyDocument = (name: string) => `query ${name}($address: String!, $vaultId: ID, $type: TransactionType, $first: Int, $after: String) {
    user(address: $address) {
      transactions(vaultId: $vaultId, type: $type, first: $first, after: $after) {
        edges { node { ${selectionOf(TransactionSchema)} } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }`

/** The GraphQL variables of a history page; the cursor is checked here too, so that REST names its own parameter (`cursor`, not GraphQL's `after`). */
function historyVariables(address: string, vaultId: string | null, query: { type: TransactionType | undefined; limit: number; cursor: string | undefined }) {
  if (query.cursor !== undefined) decodeCursor(query.cursor, { address, vaultId, type: query.type ?? null }, REST_CURSOR)
  return { address, vaultId, type: query.type, first: query.limit, after: query.cursor }
}

const walletTransactions = defineRoute({
  method: 'GET',
  path: '/users/:address/transactions',
  summary: "List a wallet's transactions across vaults",
  description:
    'Every vault at once (or one, with `vault_id`), newest first (timestamp, then id, descending), one page at a time, with the same filters, limits and cursors as the per-vault list. An unknown `vault_id` is a 404; a cursor we did not issue, or issued for another filter, is a 400.',
  tags,
  params: { address },
  query: { vault_id: textParam('Only transactions in this vault.', 'usdc-prime'), ...historyQuery },
  response: TransactionList,
  errors: ['bad_request', 'not_found'],
  document: historyDocument('WalletTransactions'),
  variables: ({ params, query }) => historyVariables(params.address, query.vault_id ?? null, query),
  shape: ({ user: { transactions } }: TransactionsData) => page(transactions, (node) => snakeKeys<TransactionWire>(node)),
})

const transactions = defineRoute({
  method: 'GET',
  path: '/users/:address/vaults/:vault_id/transactions',
  summary: "List a wallet's transactions in a vault",
  description: 'Newest first, one page at a time. An unknown vault is a 404; a cursor we did not issue, or issued for another filter, is a 400.',
  tags,
  params: { address, vault_id: vaultId },
  query: historyQuery,
  response: TransactionList,
  errors: ['bad_request', 'not_found'],
  document: historyDocument('UserTransactions'),
  variables: ({ params, query }) => historyVariables(params.address, params.vault_id, query),
  shape: ({ user: { transactions } }: TransactionsData) => page(transactions, (node) => snakeKeys<TransactionWire>(node)),
})

type RedeemsWire = z.input<typeof PendingRedeemsSchema>

interface RedeemsData {
  user: { pendingRedeems: CamelKeys<RedeemsWire> }
}

const redeems = defineRoute({
  method: 'GET',
  path: '/users/:address/redeems',
  summary: "Get a wallet's pending redeems",
  description:
    'Redeems not paid yet across vaults: pending ones with their place in the queue and an ETA, claimable ones ready to claim; their totals, and the recent average time a redeem took.',
  tags,
  params: { address },
  query: {},
  response: PendingRedeemsSchema,
  errors: ['bad_request'],
  document: `query UserPendingRedeems($address: String!) {
    user(address: $address) {
      pendingRedeems { ${selectionOf(PendingRedeemsSchema)} }
    }
  }`,
  variables: ({ params }) => ({ address: params.address }),
  shape: ({ user: { pendingRedeems } }: RedeemsData) => snakeKeys<RedeemsWire>(pendingRedeems),
})

type SummaryWire = z.input<typeof PositionSummarySchema>

interface SummaryData {
  user: { position: CamelKeys<SummaryWire> | null }
}

const summary = defineRoute({
  method: 'GET',
  path: '/users/:address/vaults/:vault_id/summary',
  summary: "Get a wallet's position in a vault",
  description:
    "Share balance, value and earnings from the wallet's transactions in the vault. 404 for an unknown vault, or when the wallet never completed a deposit there.",
  tags,
  params: { address, vault_id: vaultId },
  query: {},
  response: PositionSummarySchema,
  errors: ['bad_request', 'not_found'],
  document: `query UserPositionSummary($address: String!, $vaultId: ID!) {
    user(address: $address) {
      position(vaultId: $vaultId) { ${selectionOf(PositionSummarySchema)} }
    }
  }`,
  variables: ({ params }) => ({ address: params.address, vaultId: params.vault_id }),
  shape: ({ user: { position: p } }: SummaryData, { params }) => {
    if (p === null) throw notFound(`Wallet ${params.address} has no completed deposit in vault ${quoted(params.vault_id)}.`)
    return snakeKeys<SummaryWire>(p)
  },
})

const PositionsSchema = component(
  'Positions',
  z.object({
    address: z.string(),
    as_of: Timestamp.meta({
      description:
        "The time of the newest data used: the newest `as_of` of the positions listed (their vaults' data times), the gateway's `data_as_of` (GET /v1/status) when none is listed, as in the Data-As-Of header; the request time only while the gateway holds no data.",
    }),
    positions: z.array(PositionSummarySchema).meta({ description: 'One per vault, by vault id.' }),
  }),
)

type PositionsWire = z.input<typeof PositionsSchema>

interface PositionsData {
  user: CamelKeys<PositionsWire>
}

const positions = defineRoute({
  method: 'GET',
  path: '/users/:address/positions',
  summary: "List a wallet's positions across vaults",
  description:
    'The position summary of every vault where the wallet holds shares; with `include_closed=true`, also those it has fully withdrawn from (every vault with a completed deposit). A wallet without any is an empty list.',
  tags,
  params: { address },
  query: { include_closed: choiceParam(['false', 'true'], 'Also list positions whose share balance is 0.', 'false') },
  response: PositionsSchema,
  errors: ['bad_request'],
  document: `query UserPositions($address: String!, $includeClosed: Boolean!) {
    user(address: $address) {
      address asOf
      positions(includeClosed: $includeClosed) { ${selectionOf(PositionSummarySchema)} }
    }
  }`,
  variables: ({ params, query }) => ({ address: params.address, includeClosed: query.include_closed === 'true' }),
  shape: ({ user }: PositionsData) => {
    // RFC 3339 strings of one form (§3) order as their times do.
    const newest = user.positions.reduce<string | null>((max, p) => (max === null || p.asOf > max ? p.asOf : max), null)
    return snakeKeys<PositionsWire>({ ...user, asOf: newest ?? user.asOf })
  },
})

export const userRoutes: RestRoute[] = [walletTransactions, transactions, redeems, summary, positions]
