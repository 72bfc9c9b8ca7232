// The retry schedule (src/webhooks/README.md has the table). After the n-th failed attempt the
// next one waits base × 2^(n−1), capped, with ±jitter so that endpoints coming back from an
// outage are not hit by every instance's retries in the same second. Retries stop at the end of
// the delivery's window (24 h from its creation, or from its replay): the last attempt is made at
// the window's end, and a failure at or after it dead-letters the delivery.

export interface RetryPolicy {
  /** The wait after the first failure. */
  baseMs: number
  /** The longest wait between two attempts. */
  capMs: number
  /** How long a delivery is retried, from its creation (or replay). */
  windowMs: number
  /** Relative spread of each wait, 0–1: 0.2 draws it from [0.8, 1.2] × the nominal wait. */
  jitter: number
}

export const DEFAULT_RETRY: RetryPolicy = {
  baseMs: 30_000,
  capMs: 4 * 60 * 60_000,
  windowMs: 24 * 60 * 60_000,
  jitter: 0.2,
}

/** The nominal wait (no jitter) after `failures` failed attempts (1 = after the first). */
export function nominalDelayMs(failures: number, policy: RetryPolicy): number {
  return Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, failures - 1))
}

/**
 * When to try again after the `failures`-th failed attempt, or null when the window is over and
 * the delivery is dead. `random` draws from [0, 1).
 */
export function nextAttemptAt(now: Date, failures: number, retryUntil: Date, policy: RetryPolicy, random: () => number = Math.random): Date | null {
  if (now.getTime() >= retryUntil.getTime()) return null
  const spread = 1 - policy.jitter + 2 * policy.jitter * random()
  const at = now.getTime() + Math.round(nominalDelayMs(failures, policy) * spread)
  return new Date(Math.min(at, retryUntil.getTime()))
}

/** The nominal times of all attempts, as offsets from the delivery's creation (for the docs and tests). */
export function nominalSchedule(policy: RetryPolicy): number[] {
  const times = [0]
  for (let failures = 1; times.at(-1)! < policy.windowMs; failures++) {
    times.push(Math.min(times.at(-1)! + nominalDelayMs(failures, policy), policy.windowMs))
  }
  return times
}
