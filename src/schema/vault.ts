import { builder } from '../builder.js'
import { prisma } from '../db.js'

export const VaultStatus = builder.enumType('VaultStatus', {
  values: ['active', 'paused', 'closed'] as const,
})

export const Vault = builder.prismaObject('Vault', {
  description: 'An investment vault with its live values.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    chain: t.exposeString('chain'),
    status: t.expose('status', { type: VaultStatus }),
    tvl: t.expose('tvl', { type: 'Decimal', description: 'Total value locked, in base-asset units.' }),
    sharePrice: t.expose('sharePrice', { type: 'Decimal', description: 'Price of one share, in base-asset units.' }),
  }),
})

builder.queryField('vault', (t) =>
  t.prismaField({
    type: 'Vault',
    nullable: true,
    description: 'One vault by id, or null when there is none.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args) => prisma.vault.findUnique({ ...query, where: { id: args.id } }),
  }),
)
