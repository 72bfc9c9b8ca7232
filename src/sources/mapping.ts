import { formatUnits } from 'viem'
import { AMOUNT_SCALE, Decimal, formatAmount } from '../core/decimal.js'
import type { ImportTransaction } from '../importer/document.js'
import type { Address, VaultKind } from './config.js'

// From vault events and vault states to the importer's record shapes (decisions §12). Pure: the
// caller reads the chain, this decides what it means.
//
// - Deposit → a completed `deposit`; Withdraw of an ERC-4626 vault → a completed `withdraw`.
// - RedeemRequest (ERC-7540) → a pending `redeem` whose amount is convertToAssets(shares) at the
//   end of the request's block. A claim (the ERC-7540 vault's Withdraw, its `owner` being the
//   controller) completes the controller's open requests in request order, shares by shares; a
//   request is completed when all its shares are claimed, with completed_at = the claim's block
//   time. The claim adds no `withdraw`.
// - An open request becomes `claimable` (decisions §14) when the vault's
//   claimableRedeemRequest(requestId, controller) covers it (markClaimable).
// - A transaction belongs to the owner of the shares; its id is `<chain id>:<tx hash>:<log index>`
//   of the event that created it; every time is the block's.

export type Hex = `0x${string}`

export interface BlockRef {
  number: bigint
  hash: Hex
  /** Seconds since the epoch, as in the block header. */
  timestamp: bigint
}

interface EventBase {
  /** The vault contract that emitted the event, lowercase. */
  vault: Address
  blockNumber: bigint
  blockHash: Hex
  txHash: Hex
  logIndex: number
}

export type VaultEvent =
  | (EventBase & { type: 'deposit'; sender: Address; owner: Address; assets: bigint; shares: bigint })
  | (EventBase & { type: 'withdraw'; sender: Address; receiver: Address; owner: Address; assets: bigint; shares: bigint })
  | (EventBase & { type: 'redeem_request'; controller: Address; owner: Address; requestId: bigint; sender: Address; shares: bigint })

/** What the follower reads of a vault at a block (base units). */
export interface VaultState {
  blockNumber: bigint
  totalAssets: bigint
  totalSupply: bigint
  /** convertToAssets(10^vault decimals): the assets of one whole share. */
  assetsPerShare: bigint
  /** convertToAssets(shares) for the share amounts redeem requests asked for in this block. */
  redeemAssets: ReadonlyMap<bigint, bigint>
}

export interface VaultSnapshot {
  vault_id: string
  as_of: string
  share_price: string
  tvl: string
  base_asset_price_usd: string | null
}

/** The vault as the mapping needs it: static facts read once from the chain plus the configured id. */
export interface MappedVault {
  id: string
  chainId: number
  kind: VaultKind
  assetDecimals: number
  vaultDecimals: number
}

/**
 * A pending redeem that claims have not (fully) completed yet. The follower keeps these between
 * ranges (JSON-safe: amounts as strings) and passes them back in.
 */
export interface OpenRedeem {
  transaction: ImportTransaction
  /** Lowercase; claims are matched by it. */
  controller: Address
  /** Shares of the request not yet claimed, in base units. */
  remainingShares: string
  /**
   * The request's ERC-7540 requestId (decimal), asked about with claimableRedeemRequest. Absent on
   * requests recorded before it was kept: those are not asked about and complete on their claim.
   */
  requestId?: string
}

export interface MappedEvents {
  /** New and changed transactions, one per id, in event order. */
  transactions: ImportTransaction[]
  open: OpenRedeem[]
  /** Events that could not be mapped as the rules expect; worth a warning in the log. */
  warnings: string[]
}

/**
 * Base units → an amount string (decisions §3), exactly: formatUnits works on the digits. Only a
 * token with more than 18 decimals needs rounding (half away from zero) to fit NUMERIC(78,18).
 */
export function unitsToAmount(value: bigint, decimals: number): string {
  const text = formatUnits(value, decimals)
  if (decimals <= AMOUNT_SCALE) return text
  return formatAmount(new Decimal(text).toDecimalPlaces(AMOUNT_SCALE, Decimal.ROUND_HALF_UP))
}

/** A block time (seconds) as RFC 3339 UTC with milliseconds. */
export function blockTime(timestamp: bigint): string {
  return new Date(Number(timestamp) * 1000).toISOString()
}

export const transactionId = (chainId: number, txHash: Hex, logIndex: number) => `${chainId}:${txHash.toLowerCase()}:${logIndex}`

/** share price = convertToAssets(10^vault decimals) / 10^asset decimals; tvl = totalAssets. */
export function snapshotOf(vault: MappedVault, state: VaultState, block: BlockRef): VaultSnapshot {
  return {
    vault_id: vault.id,
    as_of: blockTime(block.timestamp),
    share_price: unitsToAmount(state.assetsPerShare, vault.assetDecimals),
    tvl: unitsToAmount(state.totalAssets, vault.assetDecimals),
    base_asset_price_usd: null,
  }
}

const byPosition = (a: VaultEvent, b: VaultEvent) => (a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1)

/**
 * Maps one vault's events (any order; they are sorted by block and log index) to transactions.
 * `blocks` must hold every event's block, `states` every redeem request's block; a missing one is
 * the caller's bug and throws.
 */
export function mapVaultEvents(input: {
  vault: MappedVault
  events: readonly VaultEvent[]
  blocks: ReadonlyMap<bigint, BlockRef>
  states: ReadonlyMap<bigint, VaultState>
  open: readonly OpenRedeem[]
}): MappedEvents {
  const { vault } = input
  const out = new Map<string, ImportTransaction>()
  const open = input.open.map((o) => ({ ...o }))
  const warnings: string[] = []
  const amount = (assets: bigint) => unitsToAmount(assets, vault.assetDecimals)
  const shares = (s: bigint) => unitsToAmount(s, vault.vaultDecimals)

  for (const e of [...input.events].sort(byPosition)) {
    const block = input.blocks.get(e.blockNumber)
    if (!block) throw new Error(`mapVaultEvents: no header for block ${e.blockNumber}`)
    const at = blockTime(block.timestamp)
    const id = transactionId(vault.chainId, e.txHash, e.logIndex)
    const base = { id, vault_id: vault.id, tx_hash: e.txHash.toLowerCase(), timestamp: at }

    if (e.type === 'deposit') {
      out.set(id, {
        ...base,
        address: e.owner.toLowerCase(),
        type: 'deposit',
        status: 'completed',
        amount: amount(e.assets),
        shares: shares(e.shares),
        completed_at: at,
      })
    } else if (e.type === 'redeem_request') {
      if (vault.kind !== 'erc7540') {
        warnings.push(`${id}: RedeemRequest from vault "${vault.id}", which is configured as ${vault.kind}: ignored`)
        continue
      }
      const state = input.states.get(e.blockNumber)
      const assets = state?.redeemAssets.get(e.shares)
      if (assets === undefined) throw new Error(`mapVaultEvents: no convertToAssets(${e.shares}) at block ${e.blockNumber}`)
      const transaction: ImportTransaction = {
        ...base,
        address: e.owner.toLowerCase(),
        type: 'redeem',
        status: 'pending',
        amount: amount(assets),
        shares: shares(e.shares),
        completed_at: null,
      }
      out.set(id, transaction)
      open.push({ transaction, controller: e.controller.toLowerCase() as Address, remainingShares: e.shares.toString(), requestId: e.requestId.toString() })
    } else if (vault.kind === 'erc4626') {
      out.set(id, {
        ...base,
        address: e.owner.toLowerCase(),
        type: 'withdraw',
        status: 'completed',
        amount: amount(e.assets),
        shares: shares(e.shares),
        completed_at: at,
      })
    } else {
      // An ERC-7540 claim: Withdraw's owner is the request's controller.
      const controller = e.owner.toLowerCase()
      let left = e.shares
      let matched = 0
      for (let i = 0; i < open.length && left > 0n; ) {
        const o = open[i]!
        if (o.controller !== controller) {
          i++
          continue
        }
        matched++
        const remaining = BigInt(o.remainingShares)
        const take = remaining < left ? remaining : left
        left -= take
        if (take === remaining) {
          const completed: ImportTransaction = { ...o.transaction, status: 'completed', completed_at: at }
          out.set(completed.id, completed)
          open.splice(i, 1)
        } else {
          o.remainingShares = (remaining - take).toString()
          i++
        }
      }
      if (matched === 0) {
        // Requested before the follower's first block: the claim stands for the whole redeem.
        out.set(id, { ...base, address: controller, type: 'redeem', status: 'completed', amount: amount(e.assets), shares: shares(e.shares), completed_at: at })
        warnings.push(`${id}: claim of ${e.shares} shares by ${controller} without a known request; recorded as a completed redeem`)
      } else if (left > 0n) {
        warnings.push(`${id}: claim of ${left} shares more than ${controller}'s known requests; the excess is not recorded`)
      }
    }
  }
  return { transactions: [...out.values()], open, warnings }
}

/**
 * Marks open requests `claimable` (decisions §14) from claimableRedeemRequest(requestId, controller)
 * as read at the end of a range (`claimableOf`; undefined when not read). Requests that share a
 * requestId and controller (ERC-7540's requestId 0 aggregates a controller's requests) are served
 * in request order, as claims are matched: a request is claimable when the claimable shares reach
 * past the unclaimed shares of the requests before it; a single request, when the amount is > 0.
 * Returns the requests that changed (the updated transaction) and the open list with them updated.
 * A claimable request never goes back to pending here: only a claim (completed) or a reorg's
 * rollback (src/sources/store.ts) moves it.
 */
export function markClaimable(
  open: readonly OpenRedeem[],
  claimableOf: (requestId: bigint, controller: Address) => bigint | undefined,
): { open: OpenRedeem[]; changed: ImportTransaction[] } {
  const ahead = new Map<string, bigint>()
  const changed: ImportTransaction[] = []
  const next = open.map((o) => {
    if (o.requestId === undefined) return o
    const key = `${o.requestId}:${o.controller}`
    const before = ahead.get(key) ?? 0n
    ahead.set(key, before + BigInt(o.remainingShares))
    if (o.transaction.status !== 'pending') return o
    const claimable = claimableOf(BigInt(o.requestId), o.controller)
    if (claimable === undefined || claimable <= before) return o
    const transaction: ImportTransaction = { ...o.transaction, status: 'claimable' }
    changed.push(transaction)
    return { ...o, transaction }
  })
  return { open: next, changed }
}
