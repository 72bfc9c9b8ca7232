import { builder } from '../builder.js'
import { parseAddress } from '../../wallets/address.js'

/** A wallet, named by its lowercase address. Any well-formed address is a User, with or without history. */
export interface UserShape {
  address: string
}

export const User = builder.objectRef<UserShape>('User').implement({
  description: 'A wallet: its history, pending redeems and positions in the vaults.',
  fields: (t) => ({
    address: t.exposeString('address', { description: 'The wallet address, lowercase.' }),
  }),
})

builder.queryField('user', (t) =>
  t.field({
    type: User,
    // Nullable: a malformed address fails this field alone, not the other root fields of the query.
    nullable: true,
    description: 'A wallet by address: 0x followed by 40 hex digits, in any case (a malformed address is a bad_request error, and null here).',
    args: { address: t.arg.string({ required: true }) },
    resolve: (_root, args) => ({ address: parseAddress(args.address) }),
  }),
)
