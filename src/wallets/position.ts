import { Decimal, formatAmount, formatDerivedAmount, type DecimalLike } from '../core/decimal.js'

/** Sums over one wallet's transactions in one vault (exact NUMERIC sums from SQL). */
export interface PositionTotals {
  /** Shares of completed deposits. */
  depositedShares: DecimalLike
  /** Shares of withdraw/redeem transactions that are completed, pending or claimable. */
  outflowShares: DecimalLike
  /** Amounts of completed deposits. */
  depositAmount: DecimalLike
  /** Amounts of withdraw/redeem transactions that are completed, pending or claimable. */
  outflowAmount: DecimalLike
  /** Submission time of the earliest completed deposit; null when there is none. */
  firstDepositAt: Date | null
}

export interface VaultPrices {
  sharePrice: DecimalLike
  /** Null when unknown (decisions §9). */
  baseAssetPriceUsd: DecimalLike | null
}

/** The spec's "User position summary" (its `as_of`, the time of the newest data used, is added by the GraphQL type), amounts formatted for the wire (docs/spec/decisions.md §3). */
export interface PositionSummary {
  vaultId: string
  shareBalance: string
  sharePrice: string
  /** Null while the vault's base-asset USD price is unknown. */
  positionValueUsd: string | null
  totalDeposits: string
  allTimeEarned: string
  firstDepositAt: Date
}

const dec = (v: DecimalLike) => new Decimal(typeof v === 'string' ? v : v.toFixed())

/**
 * docs/spec/decisions.md §6. Out-flows count while pending (or claimable, §14) too: a requested redeem's
 * shares have already left the balance, and its amount is what the wallet will receive, so it is part
 * of what it got back.
 * Sums of NUMERIC(78,18) values are exact and keep 18 decimals; only the two products are derived
 * amounts, each rounded once (half away from zero, 18 dp). `all_time_earned` rounds the whole
 * expression once, not the product first, so no error accumulates. Null without a completed deposit.
 */
export function summarizePosition(vaultId: string, totals: PositionTotals, prices: VaultPrices): PositionSummary | null {
  if (totals.firstDepositAt === null) return null
  const balance = dec(totals.depositedShares).minus(dec(totals.outflowShares))
  const valueInBase = balance.times(dec(prices.sharePrice))
  const deposits = dec(totals.depositAmount)
  return {
    vaultId,
    shareBalance: formatAmount(balance),
    sharePrice: formatAmount(prices.sharePrice),
    positionValueUsd: prices.baseAssetPriceUsd === null ? null : formatDerivedAmount(valueInBase.times(dec(prices.baseAssetPriceUsd))),
    totalDeposits: formatAmount(deposits),
    allTimeEarned: formatDerivedAmount(valueInBase.plus(dec(totals.outflowAmount)).minus(deposits)),
    firstDepositAt: totals.firstDepositAt,
  }
}

/** Whether the wallet still holds shares of the vault (what `positions` lists by default). */
export const isOpen = (summary: PositionSummary) => new Decimal(summary.shareBalance).gt(0)
