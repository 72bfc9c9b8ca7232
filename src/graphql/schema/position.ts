import { builder } from '../builder.js'
import type { Context } from '../context.js'
import { isOpen, type PositionSummary } from '../../wallets/position.js'
import { notFound, quoted } from '../../core/errors.js'
import { positionsOf } from '../../wallets/store.js'
import { pendingRedeemsOf, type PendingRedeemRow, type PendingRedeems as PendingRedeemsShape } from '../../wallets/store.js'
import { TransactionStatusEnum, TransactionTypeEnum } from './transaction.js'
import { User } from './user.js'

/**
 * The `asOf` of wallet answers (decisions §10; before, the request time): the data time of the
 * vaults the answer is computed from (src/freshness/answer.ts: a position, its vault's; pending
 * redeems, their vaults'; none, the gateway's data_as_of), the value of the answer's Data-As-Of
 * header when it reads nothing else. The request time only while there is no data at all.
 */
const AS_OF =
  "The time of the newest data used: the newest snapshot or transaction time of the vaults it is computed from (the gateway's `meta.dataAsOf` when there are none), as in the Data-As-Of header; the request time only while the gateway holds no data."
const asOfVaults = async (ctx: Context, vaultIds: string[]) => (await ctx.readData(vaultIds)) ?? ctx.now

// Named UserPosition: `Position` is the composition's allocation entry in the spec.
export const UserPosition = builder.objectRef<PositionSummary>('UserPosition').implement({
  description:
    "A wallet's position in one vault (the spec's user position summary). Out-flows (withdraw and redeem, completed or pending) have left the balance; amounts are exact, derived ones rounded once to 18 decimals.",
  fields: (t) => ({
    vaultId: t.exposeID('vaultId'),
    asOf: t.field({ type: 'DateTime', description: AS_OF, resolve: (p, _a, ctx) => asOfVaults(ctx, [p.vaultId]) }),
    shareBalance: t.expose('shareBalance', {
      type: 'Decimal',
      description: 'Shares of completed deposits minus shares of completed and pending withdrawals and redeems.',
    }),
    sharePrice: t.expose('sharePrice', { type: 'Decimal', description: "The vault's share price, in base-asset units." }),
    positionValueUsd: t.expose('positionValueUsd', {
      type: 'Decimal',
      nullable: true,
      description: 'shareBalance × sharePrice × the base asset’s USD price; null while that price is unknown.',
    }),
    totalDeposits: t.expose('totalDeposits', { type: 'Decimal', description: 'Sum of completed deposit amounts, in base-asset units.' }),
    allTimeEarned: t.expose('allTimeEarned', {
      type: 'Decimal',
      description: 'shareBalance × sharePrice + withdrawn and redeemed amounts − totalDeposits, in base-asset units; negative for a loss.',
    }),
    firstDepositAt: t.expose('firstDepositAt', { type: 'DateTime', description: 'Submission time of the earliest completed deposit.' }),
  }),
})

const RedeemEta = builder.objectRef<{ p50: Date; p90: Date }>('RedeemEta').implement({
  description:
    "When a pending redeem should be paid: its submission time plus the 50th / 90th percentile (nearest rank, whole seconds) of its vault's submission-to-completion delays over the last 90 days.",
  fields: (t) => ({
    p50: t.expose('p50', { type: 'DateTime' }),
    p90: t.expose('p90', { type: 'DateTime' }),
  }),
})

export const PendingRedeem = builder.objectRef<PendingRedeemRow>('PendingRedeem').implement({
  fields: (t) => ({
    vaultId: t.exposeID('vaultId'),
    amount: t.expose('amount', { type: 'Decimal', description: 'In base-asset units.' }),
    submittedAt: t.expose('submittedAt', { type: 'DateTime' }),
    transactionType: t.expose('transactionType', { type: TransactionTypeEnum }),
    txHash: t.exposeString('txHash'),
    status: t.expose('status', { type: TransactionStatusEnum, description: '`pending` (in the queue) or `claimable` (the assets are ready to claim).' }),
    queuePosition: t.exposeInt('queuePosition', {
      nullable: true,
      description: "1-based place among the vault's pending redeems by submission time (then id); null when claimable.",
    }),
    amountAhead: t.expose('amountAhead', {
      type: 'Decimal',
      nullable: true,
      description: 'Sum of the pending amounts ahead of this one in its vault, in base-asset units; null when claimable.',
    }),
    eta: t.expose('eta', {
      type: RedeemEta,
      nullable: true,
      description: 'Null when claimable, or when no redeem completed in the vault in the last 90 days.',
    }),
  }),
})

export const PendingRedeems = builder.objectRef<PendingRedeemsShape>('PendingRedeems').implement({
  description: "A wallet's redeems that are not paid yet (pending, or claimable), across vaults.",
  fields: (t) => ({
    address: t.exposeString('address'),
    asOf: t.expose('asOf', { type: 'DateTime', description: AS_OF }),
    pendingRedeems: t.expose('pendingRedeems', { type: [PendingRedeem], description: 'Pending and claimable redeems, oldest first.' }),
    totalPending: t.expose('totalPending', { type: 'Decimal', description: 'Exact sum of the pending amounts (claimable ones not included).' }),
    totalClaimable: t.expose('totalClaimable', { type: 'Decimal', description: 'Exact sum of the claimable amounts.' }),
    averageRedeemDelay: t.exposeInt('averageRedeemDelay', {
      description:
        'Seconds, rounded down: the mean time from submission to completion of the redeems (any wallet’s) completed in the last 90 days in the vaults where this wallet has pending redeems; 0 without such history.',
    }),
  }),
})

builder.objectFields(User, (t) => ({
  // Reads no vault by itself: the gateway's data_as_of, without widening the answer's Data-As-Of
  // (GET /v1/users/{address}/positions takes its as_of from the positions when it has any).
  asOf: t.field({ type: 'DateTime', description: AS_OF, resolve: (_u, _a, ctx) => asOfVaults(ctx, []) }),
  pendingRedeems: t.field({
    type: PendingRedeems,
    resolve: async (user, _args, ctx) => {
      const redeems = await pendingRedeemsOf(ctx.db, user.address, ctx.now)
      return {
        ...redeems,
        asOf: await asOfVaults(
          ctx,
          redeems.pendingRedeems.map((r) => r.vaultId),
        ),
      }
    },
  }),
  position: t.field({
    type: UserPosition,
    nullable: true,
    description: 'The position in one vault; null when the wallet never completed a deposit there. An unknown vault is a not_found error.',
    args: { vaultId: t.arg.id({ required: true }) },
    resolve: async (user, args, ctx) => {
      const result = await ctx.loaders.position.load({ address: user.address, vaultId: args.vaultId })
      if (result === undefined) throw notFound(`Vault ${quoted(args.vaultId)} not found.`)
      await ctx.readData([args.vaultId])
      return result
    },
  }),
  positions: t.field({
    type: [UserPosition],
    description: 'Positions in every vault where the wallet holds shares (with includeClosed, also those fully withdrawn), by vault id.',
    args: { includeClosed: t.arg.boolean({ defaultValue: false, required: true }) },
    resolve: async (user, args, ctx) => {
      const all = await positionsOf(ctx.db, user.address)
      const answered = args.includeClosed ? all : all.filter(isOpen)
      // The answer uses the positions it returns: their vaults' times (decisions §10).
      await ctx.readData(answered.map((p) => p.vaultId))
      return answered
    },
  }),
}))
