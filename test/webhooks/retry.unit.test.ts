import { describe, expect, it } from 'vitest'
import { DEFAULT_RETRY, nextAttemptAt, nominalSchedule } from '../../src/webhooks/retry.js'

// The documented schedule (src/webhooks/README.md): 15 attempts over 24 h, then dead.

const min = 60_000
const hour = 60 * min

describe('retry schedule', () => {
  it('is the documented one: 30 s doubling to a 4 h cap, the last attempt at 24 h', () => {
    expect(nominalSchedule(DEFAULT_RETRY)).toEqual([
      0,
      30_000,
      1.5 * min,
      3.5 * min,
      7.5 * min,
      15.5 * min,
      31.5 * min,
      63.5 * min,
      127.5 * min,
      255.5 * min,
      255.5 * min + 4 * hour,
      255.5 * min + 8 * hour,
      255.5 * min + 12 * hour,
      255.5 * min + 16 * hour,
      24 * hour,
    ])
  })

  it('spreads each wait by ±20 %', () => {
    const now = new Date('2026-11-21T12:00:00.000Z')
    const until = new Date(now.getTime() + 24 * hour)
    const at = (failures: number, r: number) => nextAttemptAt(now, failures, until, DEFAULT_RETRY, () => r)!.getTime() - now.getTime()
    expect([at(1, 0), at(1, 0.5), at(1, 0.999999)]).toEqual([24_000, 30_000, 36_000])
    expect([at(5, 0), at(5, 0.5)]).toEqual([0.8 * 8 * min, 8 * min])
    expect(at(20, 0.5)).toBe(4 * hour)
  })

  it('puts the last attempt at the end of the window and gives up after it', () => {
    const until = new Date('2026-11-22T12:00:00.000Z')
    expect(nextAttemptAt(new Date(until.getTime() - 10 * min), 12, until, DEFAULT_RETRY, () => 0.5)).toEqual(until)
    expect(nextAttemptAt(until, 13, until, DEFAULT_RETRY, () => 0.5)).toBeNull()
    expect(nextAttemptAt(new Date(until.getTime() + 1), 1, until, DEFAULT_RETRY, () => 0.5)).toBeNull()
  })
})
