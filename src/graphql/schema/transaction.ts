import { TransactionStatus, TransactionType } from '../../generated/prisma/enums.js'
import { builder } from '../builder.js'
import { cost, pageCost } from '../cost.js'
import { checkPageSize } from '../../core/page.js'
import { GRAPHQL_AFTER, lazyEdges } from '../../core/signed-cursor.js'
import { decodeCursor, encodeCursor, type HistoryFilter } from '../../wallets/history-cursor.js'
import { notFound, quoted } from '../../core/errors.js'
import { vaultExists } from '../../vaults/store.js'
import { fetchHistoryPage, type TransactionRow } from '../../wallets/store.js'
import { User } from './user.js'

export const TransactionTypeEnum = builder.enumType(TransactionType, { name: 'TransactionType' })

export const TransactionStatusEnum = builder.enumType(TransactionStatus, { name: 'TransactionStatus' })

export const Transaction = builder.objectRef<TransactionRow>('Transaction').implement({
  description: "One of a wallet's transactions in a vault.",
  fields: (t) => ({
    id: t.exposeID('id'),
    vaultId: t.exposeID('vaultId'),
    type: t.expose('type', { type: TransactionTypeEnum }),
    status: t.expose('status', { type: TransactionStatusEnum }),
    amount: t.expose('amount', { type: 'Decimal', description: 'In base-asset units.' }),
    timestamp: t.expose('timestamp', { type: 'DateTime', description: 'When the transaction was submitted.' }),
    txHash: t.exposeString('txHash'),
  }),
})

export const TransactionConnection = builder.connectionObject(
  { type: Transaction, name: 'TransactionConnection', edgesNullable: { list: false, items: false }, nodeNullable: false },
  { name: 'TransactionEdge' },
)

builder.objectField(User, 'transactions', (t) =>
  t.field({
    type: TransactionConnection,
    // Nullable: an unknown vault or a bad cursor fails this field alone, not the wallet's other fields.
    nullable: true,
    description:
      "The wallet's transactions, in one vault or (without vaultId) across every vault, newest first (timestamp, then id, descending). Forward pagination: pass pageInfo.endCursor as `after` while pageInfo.hasNextPage. An unknown vault is a not_found error.",
    extensions: cost(pageCost),
    args: {
      vaultId: t.arg.id({ description: 'Only this vault; omitted or null: every vault.' }),
      type: t.arg({ type: TransactionTypeEnum, description: 'Only transactions of this type.' }),
      first: t.arg.int({ description: 'Page size, 1 to 200 (default 50); outside that range a bad_request error.' }),
      after: t.arg.string({ description: 'An endCursor (or edge cursor) from a previous page of the same list.' }),
    },
    resolve: async (user, args, ctx) => {
      const filter: HistoryFilter = { address: user.address, vaultId: args.vaultId ?? null, type: args.type ?? null }
      const limit = checkPageSize(args.first, 'first')
      const after = args.after === null || args.after === undefined ? null : decodeCursor(args.after, filter, GRAPHQL_AFTER)
      const { rows, hasNextPage } = await fetchHistoryPage(ctx.db, filter, after, limit)
      // Rows can only exist for a known vault (foreign key), so the vault is only looked up for an empty page.
      if (rows.length === 0 && filter.vaultId !== null && !(await vaultExists(ctx.db, filter.vaultId)))
        throw notFound(`Vault ${quoted(filter.vaultId)} not found.`)
      // The wallet's history is as of the data time of the vaults it read (decisions §10): the one
      // vault asked for, or across vaults those of this page's rows (none: the gateway-wide time).
      await ctx.readData(filter.vaultId !== null ? [filter.vaultId] : rows.map((row) => row.vaultId))
      const edges = lazyEdges(rows, (row) => encodeCursor(filter, row))
      return {
        edges,
        pageInfo: {
          hasNextPage,
          hasPreviousPage: after !== null,
          startCursor: edges[0]?.cursor ?? null,
          endCursor: edges.at(-1)?.cursor ?? null,
        },
      }
    },
  }),
)
