import { builder } from '../builder.js'
import { PAGE_SIZE } from '../../core/page.js'
import { lazyEdges } from '../../core/signed-cursor.js'
import { cost, pageCost } from '../cost.js'
import { PUBLIC } from '../public-operations.js'
import { checkSearch, encodeVaultCursor, SEARCH_MAX_LENGTH, type VaultListFilter, vaultPageRequest } from '../../vaults/list.js'
import { findVaultByAddress, findVaultPage } from '../../vaults/store.js'
import { caip10, parseChainId, parseContractAddress } from '../../vaults/chain.js'
import { tvlUsd } from '../../vaults/performance.js'
import { type Prisma, VaultStatus } from '../../generated/prisma/client.js'

export const VaultStatusEnum = builder.enumType(VaultStatus, { name: 'VaultStatus' })

export const Contract = builder.objectRef<{ address: string }>('Contract').implement({
  extensions: PUBLIC,
  description: "The vault's on-chain contract.",
  fields: (t) => ({
    address: t.exposeString('address'),
  }),
})

export const DepositConstraints = builder
  .objectRef<{ maxDeposit: Prisma.Decimal | null; minDeposit: Prisma.Decimal | null; paused: boolean | null }>('DepositConstraints')
  .implement({
    extensions: PUBLIC,
    description: 'Limits on deposits; each is null when the vault publishes none.',
    fields: (t) => ({
      maxDeposit: t.expose('maxDeposit', { type: 'Decimal', nullable: true, description: 'In base-asset units.' }),
      minDeposit: t.expose('minDeposit', { type: 'Decimal', nullable: true, description: 'In base-asset units.' }),
      paused: t.exposeBoolean('paused', { nullable: true }),
    }),
  })

export const WithdrawConstraints = builder
  .objectRef<{
    instantLiquidity: boolean | null
    instantSlippageMaxBps: number | null
    redeem24hThresholdPctOfAum: number | null
    redeem48hAboveThreshold: boolean | null
  }>('WithdrawConstraints')
  .implement({
    extensions: PUBLIC,
    description: 'Conditions on withdrawals; each is null when the vault publishes none.',
    fields: (t) => ({
      instantLiquidity: t.exposeBoolean('instantLiquidity', { nullable: true }),
      instantSlippageMaxBps: t.exposeInt('instantSlippageMaxBps', { nullable: true, description: 'Basis points.' }),
      redeem24hThresholdPctOfAum: t.exposeFloat('redeem24hThresholdPctOfAum', { nullable: true, description: 'Percent (0-100) of assets under management.' }),
      redeem48hAboveThreshold: t.exposeBoolean('redeem48hAboveThreshold', { nullable: true }),
    }),
  })

export const Icons = builder.objectRef<{ dark: string | null; light: string | null }>('Icons').implement({
  extensions: PUBLIC,
  description: 'Icon URLs for dark and light backgrounds.',
  fields: (t) => ({
    dark: t.exposeString('dark', { nullable: true }),
    light: t.exposeString('light', { nullable: true }),
  }),
})

export const Vault = builder.prismaObject('Vault', {
  extensions: PUBLIC,
  description: 'An investment vault with its live values.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    chain: t.exposeString('chain'),
    chainId: t.exposeString('chainId', { nullable: true }),
    caip10: t.string({
      nullable: true,
      description:
        'CAIP-10 account id of the vault contract: eip155:<chainId>:<EIP-55 checksummed address>; null when chainId is null or not a decimal integer.',
      resolve: (v) => caip10(v.chainId, v.contractAddress),
    }),
    symbol: t.exposeString('symbol', { description: "The vault share's symbol." }),
    baseAsset: t.exposeString('baseAsset', { description: 'The asset deposited and redeemed; amounts are in its units.' }),
    status: t.expose('status', { type: VaultStatusEnum }),
    tvl: t.expose('tvl', { type: 'Decimal', description: 'Total value locked, in base-asset units.' }),
    sharePrice: t.expose('sharePrice', { type: 'Decimal', description: 'Price of one share, in base-asset units.' }),
    baseAssetPriceUsd: t.expose('baseAssetPriceUsd', { type: 'Decimal', nullable: true, description: 'USD price of one base-asset unit; null when unknown.' }),
    tvlUsd: t.field({
      type: 'Decimal',
      nullable: true,
      description: 'Total value locked in USD: tvl × baseAssetPriceUsd, exact (rounded once to 18 decimals); null when the price is unknown.',
      resolve: (v) => tvlUsd(v.tvl, v.baseAssetPriceUsd),
    }),
    perfFeeBps: t.exposeInt('perfFeeBps', { description: 'Performance fee, in basis points.' }),
    mgmtFeeBps: t.exposeInt('mgmtFeeBps', { nullable: true, description: 'Management fee, in basis points.' }),
    contract: t.field({ type: Contract, resolve: (v) => ({ address: v.contractAddress }) }),
    depositConstraints: t.field({
      type: DepositConstraints,
      resolve: (v) => ({ maxDeposit: v.maxDeposit, minDeposit: v.minDeposit, paused: v.depositPaused }),
    }),
    withdrawConstraints: t.field({
      type: WithdrawConstraints,
      resolve: (v) => ({
        instantLiquidity: v.instantLiquidity,
        instantSlippageMaxBps: v.instantSlippageMaxBps,
        redeem24hThresholdPctOfAum: v.redeem24hThresholdPctOfAum,
        redeem48hAboveThreshold: v.redeem48hAboveThreshold,
      }),
    }),
    icons: t.field({ type: Icons, resolve: (v) => ({ dark: v.iconDark, light: v.iconLight }) }),
    apiEndpoint: t.exposeString('apiEndpoint'),
    description: t.exposeString('description', { nullable: true }),
    docsUrl: t.exposeString('docsUrl', { nullable: true }),
    inceptionDate: t.string({
      nullable: true,
      description: 'A calendar date, "YYYY-MM-DD".',
      // Stored as a DATE, which Prisma reads as midnight UTC.
      resolve: (v) => v.inceptionDate?.toISOString().slice(0, 10) ?? null,
    }),
    strategyBrief: t.exposeString('strategyBrief', { nullable: true }),
  }),
})

builder.queryField('vault', (t) =>
  t.prismaField({
    type: 'Vault',
    nullable: true,
    extensions: PUBLIC,
    description: 'One vault by id, or null when there is none.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) => {
      const vault = await ctx.db.vault.findUnique({ ...query, where: { id: args.id } })
      // Every field of a vault is its data: the answer is as of the vault's data time (decisions §10).
      if (vault) await ctx.readData([vault.id])
      return vault
    },
  }),
)

builder.queryField('vaultByAddress', (t) =>
  t.field({
    type: Vault,
    nullable: true,
    extensions: PUBLIC,
    description: 'The vault with this chain id and contract address (compared ignoring case), or null when there is none.',
    args: {
      chainId: t.arg.string({ required: true, description: 'Decimal (8453) or CAIP-2 (eip155:8453).' }),
      address: t.arg.string({ required: true, description: 'The contract address: 0x followed by 40 hex digits, in any case.' }),
    },
    resolve: async (_root, args, ctx) => {
      const vault = await findVaultByAddress(ctx.db, parseChainId(args.chainId, 'chainId'), parseContractAddress(args.address))
      // As of the vault's data time, as vault(id:) is (decisions §10; src/freshness/answer.ts).
      if (vault) await ctx.readData([vault.id])
      return vault
    },
  }),
)

export const VaultConnection = builder.connectionObject(
  { type: Vault, name: 'VaultConnection', edgesNullable: { list: false, items: false }, nodeNullable: false, extensions: PUBLIC },
  { name: 'VaultEdge', extensions: PUBLIC },
)

export const VaultOrderField = builder.enumType('VaultOrderField', {
  description: 'What the vault list can be sorted by.',
  values: {
    tvl: {
      value: 'tvl' as const,
      description: 'Total value locked, in base-asset units (assets of different vaults are not comparable: prefer tvlUsd across assets).',
    },
    tvlUsd: { value: 'tvlUsd' as const, description: 'Total value locked in USD; vaults without a USD price come last.' },
    apy7d: { value: 'apy7d' as const, description: 'Realized 7-day APY (performance.apy7d); vaults with less history come last.' },
    apy30d: { value: 'apy30d' as const, description: 'Realized 30-day APY (performance.apy30d); vaults with less history come last.' },
  },
})

export const OrderDirection = builder.enumType('OrderDirection', {
  values: { asc: { value: 'asc' as const, description: 'Smallest first.' }, desc: { value: 'desc' as const, description: 'Largest first.' } },
})

export const VaultOrder = builder.inputType('VaultOrder', {
  description: 'A value to sort the vault list by. Vaults without the value come last in either direction; ties go by id.',
  fields: (t) => ({
    field: t.field({ type: VaultOrderField, required: true }),
    direction: t.field({ type: OrderDirection, required: true, defaultValue: 'desc', description: 'Largest first unless asc.' }),
  }),
})

builder.queryField('vaults', (t) =>
  t.field({
    type: VaultConnection,
    description: `Vaults ordered by id (or by orderBy), optionally filtered and searched. Pages hold ${PAGE_SIZE.min} to ${PAGE_SIZE.max} vaults (default ${PAGE_SIZE.default}).`,
    extensions: { ...cost(pageCost), ...PUBLIC },
    args: {
      chain: t.arg.string({ description: 'Only vaults on this chain.' }),
      status: t.arg({ type: VaultStatusEnum, description: 'Only vaults in this status.' }),
      search: t.arg.string({
        description: `Only vaults whose id, name or symbol contains this text, ignoring case (at most ${SEARCH_MAX_LENGTH} characters).`,
      }),
      orderBy: t.arg({ type: VaultOrder, description: 'Sort by a value instead of by id.' }),
      before: t.arg.string(),
      after: t.arg.string(),
      first: t.arg.int(),
      last: t.arg.int(),
    },
    resolve: async (_root, args, ctx) => {
      const filter: VaultListFilter = { chain: args.chain ?? null, status: args.status ?? null, search: checkSearch(args.search) }
      const order = args.orderBy ? { field: args.orderBy.field, direction: args.orderBy.direction ?? 'desc' } : null
      const page = vaultPageRequest(filter, args, order)
      const { rows, more, positions, performance } = await findVaultPage(ctx.db, filter, page, { now: ctx.now, spikePct: ctx.settings.spikePct })
      // A page is as of the newest data of the vaults it lists (an empty one: of all the data, decisions §10).
      await ctx.readData(rows.map((r) => r.id))
      // The performance an APY order read already answers the nodes' performance fields.
      for (const [vaultId, p] of performance ?? []) ctx.loaders.performance.prime({ vaultId, now: ctx.now }, p)
      const edges = lazyEdges(rows, (node) => encodeVaultCursor(filter, order, positions.get(node.id)!))
      const forward = page.direction === 'forward'
      return {
        edges,
        pageInfo: {
          hasNextPage: forward ? more : page.from !== null,
          hasPreviousPage: forward ? page.from !== null : more,
          startCursor: edges[0]?.cursor ?? null,
          endCursor: edges.at(-1)?.cursor ?? null,
        },
      }
    },
  }),
)

// The Federation 2 entity (decisions §15): a supergraph's other subgraphs refer to a vault by its
// id, and the router asks `_entities` for the rest. Only in the subgraph schema
// (GRAPHQL_FEDERATION=true, src/graphql/schema/index.ts); `findUnique` calls of one tick are one
// statement (Prisma batches them), so a list of representations costs one read.
builder.asEntity(Vault, {
  key: builder.selection<{ id: string }>('id'),
  resolveReference: async (ref, ctx) => {
    const vault = await ctx.db.vault.findUnique({ where: { id: ref.id } })
    if (vault) await ctx.readData([vault.id])
    return vault
  },
})
