import { builder } from '../builder.js'
import type { Context } from '../context.js'
import { KEY_MANAGEMENT } from '../public-operations.js'
import { AppError, notFound, quoted } from '../../core/errors.js'
import type { LiveHub } from '../../live/hub.js'
import { keyChanges, vaultChanges, walletTransactions } from '../../live/streams.js'
import { findVault, vaultExists } from '../../vaults/store.js'
import { parseAddress } from '../../wallets/address.js'
import { ApiKeyEvent } from './api-key.js'
import { Transaction } from './transaction.js'
import { Vault } from './vault.js'

// GraphQL subscriptions (docs/spec/decisions.md §11), served over SSE by Yoga on /graphql
// (Accept: text/event-stream; src/graphql/sse.ts) and over WebSocket (graphql-transport-ws:
// src/http/pipeline/websocket.ts). Each field registers with the instance's hub
// (src/live/hub.ts), which hears every instance's commits on the one LISTEN connection; each event
// is resolved as of its own time, with fresh loaders (ctx.fresh()). How many streams a client and
// an instance may hold open is the HTTP layer's business (src/http/pipeline/streams.ts).

builder.subscriptionType({})

function hubOf(ctx: Context): LiveHub {
  if (!ctx.live) throw new AppError('unavailable', 'Subscriptions are not served here.')
  return ctx.live
}

builder.subscriptionField('vaultUpdated', (t) =>
  t.field({
    type: Vault,
    description:
      'The vault after each change to it: live values (a new snapshot), history and performance, composition or its record (an import, a chain-source update or reorg, on any instance). Several changes while an event is being sent make one event. An unknown vault is a not_found error.',
    args: { id: t.arg.id({ required: true }) },
    subscribe: async (_root, args, ctx) => {
      const hub = hubOf(ctx)
      if (!(await vaultExists(ctx.db, args.id))) throw notFound(`Vault ${quoted(args.id)} not found.`)
      return vaultChanges(hub, args.id)
    },
    resolve: async (_event, args, ctx) => {
      ctx.fresh()
      const vault = await findVault(ctx.db, args.id)
      if (!vault) throw notFound(`Vault ${quoted(args.id)} not found.`)
      return vault
    },
  }),
)

builder.subscriptionField('walletActivity', (t) =>
  t.field({
    type: Transaction,
    description:
      'Each transaction of the wallet that a change adds, or updates (its status: a redeem claimable or completed, or pending again after a chain reorg), in any vault, oldest first. `address`: 0x and 40 hex digits, any case.',
    args: { address: t.arg.string({ required: true }) },
    subscribe: (_root, args, ctx) => walletTransactions(ctx.db, hubOf(ctx), parseAddress(args.address)),
    resolve: (row, _args, ctx) => {
      ctx.fresh()
      return row
    },
  }),
)

builder.subscriptionField('apiKeyChanged', (t) =>
  t.field({
    type: ApiKeyEvent,
    extensions: KEY_MANAGEMENT,
    description:
      "Each change to the caller's own API key from now on, as its history entry: created, revoked, replaced, disabled (the wallet left the allowlist) or expired. Wallet session auth, as for `apiKey`.",
    subscribe: async (_root, _args, ctx) => {
      const hub = hubOf(ctx)
      const { wallet } = await ctx.viewer()
      return keyChanges(ctx.db, hub, wallet, ctx.clock)
    },
    resolve: (change, _args, ctx) => {
      ctx.fresh()
      return { ...change, cursor: '' }
    },
  }),
)
