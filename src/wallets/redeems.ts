import { Decimal, formatAmount, type DecimalLike } from '../core/decimal.js'

/** How far back completed redeems count towards the average delay (docs/spec/decisions.md §6). */
export const REDEEM_DELAY_WINDOW_DAYS = 90

/** Completed redeems count when `from <= completed_at <= to`; `to` is the request time. */
export function redeemDelayWindow(now: Date): { from: Date; to: Date } {
  return { from: new Date(now.getTime() - REDEEM_DELAY_WINDOW_DAYS * 86_400_000), to: now }
}

/**
 * Mean of (completed_at − submitted time) over `count` redeems whose delays add up to `totalMs`,
 * in whole seconds rounded down; 0 without history. Integer arithmetic, so a mean of 4.9999 s is 4.
 */
export function averageRedeemDelaySeconds(totalMs: bigint, count: bigint): number {
  if (count <= 0n) return 0
  return Number(totalMs / (count * 1000n))
}

/** The exact sum of amounts, formatted for the wire ("0" for none). */
export function sumAmounts(amounts: DecimalLike[]): string {
  return formatAmount(amounts.reduce<Decimal>((acc, a) => acc.plus(typeof a === 'string' ? a : a.toFixed()), new Decimal(0)))
}

/**
 * When a pending redeem should be paid (decisions §14): its submitted time plus the vault's 50th and
 * 90th percentile delays, whole seconds (nearest rank, from SQL's percentile_disc).
 */
export function redeemEta(submittedAt: Date, delaySeconds: { p50: number; p90: number }): { p50: Date; p90: Date } {
  return { p50: new Date(submittedAt.getTime() + delaySeconds.p50 * 1000), p90: new Date(submittedAt.getTime() + delaySeconds.p90 * 1000) }
}
