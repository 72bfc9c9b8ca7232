import { describe, expect, it } from 'vitest'
import { parseAddress } from '../../src/wallets/address.js'
import { isOpen, summarizePosition } from '../../src/wallets/position.js'
import { averageRedeemDelaySeconds, redeemDelayWindow, sumAmounts } from '../../src/wallets/redeems.js'
import { checkPageSize, parsePageSize } from '../../src/core/page.js'
import { decodeCursor, encodeCursor, parseTypeParam, type HistoryFilter } from '../../src/wallets/history-cursor.js'

const checkLimit = (n: number | null | undefined) => checkPageSize(n, 'limit')
const parseLimitParam = (raw: string | undefined) => parsePageSize(raw)
import { AppError } from '../../src/core/errors.js'

/** The AppError `fn` throws, as { code, message }. */
function thrown(fn: () => unknown): { code: string; message: string } {
  try {
    fn()
  } catch (e) {
    if (e instanceof AppError) return { code: e.code, message: e.message }
    throw e
  }
  throw new Error('expected an AppError')
}

describe('parseAddress', () => {
  it('accepts 0x + 40 hex digits in any case and answers lowercase', () => {
    expect(parseAddress('0x52908400098527886E0F7030069857D2E4169EE7')).toBe('0x52908400098527886e0f7030069857d2e4169ee7')
    expect(parseAddress(`0x${'a'.repeat(40)}`)).toBe(`0x${'a'.repeat(40)}`)
  })
  it.each([
    ['0x'],
    [`0x${'a'.repeat(39)}`],
    [`0x${'a'.repeat(41)}`],
    [`0X${'a'.repeat(40)}`],
    [`${'a'.repeat(42)}`],
    [`0x${'z'.repeat(40)}`],
    [` 0x${'a'.repeat(40)}`],
    [`0x${'a'.repeat(40)}\n`],
    [''],
  ])('rejects %j', (input) => {
    expect(thrown(() => parseAddress(input))).toEqual({ code: 'bad_request', message: 'address must be an EVM address: 0x followed by 40 hex digits.' })
  })
})

describe('page size', () => {
  const error = { code: 'bad_request', message: 'limit must be an integer from 1 to 200.' }
  it('defaults to 50 and accepts 1 to 200', () => {
    expect([checkLimit(undefined), checkLimit(null), checkLimit(1), checkLimit(200)]).toEqual([50, 50, 1, 200])
    expect([parseLimitParam(undefined), parseLimitParam('1'), parseLimitParam('200')]).toEqual([50, 1, 200])
  })
  it.each([[0], [201], [-1], [1.5], [Number.NaN]])('rejects first = %s', (n) => expect(thrown(() => checkLimit(n))).toEqual(error))
  it.each([['0'], ['201'], ['abc'], [''], ['1.5'], ['-1'], ['+5'], [' 5'], ['1e2'], ['99999999999999999999'], ['007'], ['050']])('rejects limit=%j', (raw) => {
    expect(thrown(() => parseLimitParam(raw))).toEqual(error)
  })
})

describe('parseTypeParam', () => {
  it('accepts the three types, absent means all', () => {
    expect(['deposit', 'withdraw', 'redeem', undefined].map(parseTypeParam)).toEqual(['deposit', 'withdraw', 'redeem', undefined])
  })
  it.each([['Deposit'], [''], ['swap']])('rejects %j', (raw) => {
    expect(thrown(() => parseTypeParam(raw))).toEqual({ code: 'bad_request', message: 'type must be one of deposit, withdraw, redeem.' })
  })
})

describe('history cursor', () => {
  const filter: HistoryFilter = { address: `0x${'a'.repeat(40)}`, vaultId: 'v1', type: null }
  const position = { timestamp: new Date('2026-06-01T00:00:00.123Z'), id: 't0042' }
  const foreign = { code: 'bad_request', message: 'cursor was issued for a different address, vault or type filter; start again from the first page.' }
  const invalid = { code: 'bad_request', message: 'cursor is not a cursor this service issued; pass next_cursor exactly as received.' }

  it('round-trips the position for the same filter, and is URL-safe', () => {
    const cursor = encodeCursor(filter, position)
    expect(cursor).toMatch(/^[\w-]+\.[\w-]{22}$/)
    expect(decodeCursor(cursor, { ...filter })).toEqual(position)
    expect(encodeCursor(filter, position)).toBe(cursor)
  })

  it('rejects a cursor of another address, vault or type, although its MAC is good', () => {
    const cursor = encodeCursor(filter, position)
    expect(thrown(() => decodeCursor(cursor, { ...filter, address: `0x${'b'.repeat(40)}` }))).toEqual(foreign)
    expect(thrown(() => decodeCursor(cursor, { ...filter, vaultId: 'v2' }))).toEqual(foreign)
    expect(thrown(() => decodeCursor(cursor, { ...filter, type: 'deposit' }))).toEqual(foreign)
    expect(thrown(() => decodeCursor(encodeCursor({ ...filter, type: 'redeem' }, position), filter))).toEqual(foreign)
  })

  it('rejects altered and made-up cursors', () => {
    const cursor = encodeCursor(filter, position)
    const [body, mac] = cursor.split('.') as [string, string]
    const [v, ms, , tag] = JSON.parse(Buffer.from(body, 'base64url').toString()) as [number, number, string, string]
    const forge = (payload: unknown) => `${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${mac}`
    for (const bad of [
      forge([v, ms + 1, 't0042', tag]),
      forge([v, ms, 't0041', tag]),
      forge([2, ms, 't0042', tag]),
      `${body}.${mac.slice(0, -1)}`,
      `${body}.${mac}A`,
      `${body}`,
      `.${mac}`,
      `${body}.${mac}.`,
      'x'.repeat(600),
      'a b.c',
    ]) {
      expect(thrown(() => decodeCursor(bad, filter))).toEqual(invalid)
    }
  })
})

describe('summarizePosition', () => {
  const prices = { sharePrice: '0.9', baseAssetPriceUsd: '1.0002' }
  it('is null without a completed deposit', () => {
    expect(
      summarizePosition('v', { depositedShares: '0', outflowShares: '5', depositAmount: '0', outflowAmount: '5', firstDepositAt: null }, prices),
    ).toBeNull()
  })
  it('subtracts out-flows, rounds the products once, half away from zero, and shows a loss as negative', () => {
    const first = new Date('2026-10-03T00:00:00.000Z')
    const s = summarizePosition(
      'v',
      { depositedShares: '1476.190476190476190476', outflowShares: '300', depositAmount: '1500', outflowAmount: '305', firstDepositAt: first },
      prices,
    )
    expect(s).toEqual({
      vaultId: 'v',
      shareBalance: '1176.190476190476190476',
      sharePrice: '0.9',
      positionValueUsd: '1058.783142857142857143', // 1058.78314285714285714268568
      totalDeposits: '1500',
      allTimeEarned: '-136.428571428571428572', // -136.4285714285714285716
      firstDepositAt: first,
    })
    expect(isOpen(s!)).toBe(true)
  })
  it('rounds a half exactly away from zero in both directions', () => {
    const at = new Date(0)
    // 1 share × 0.0000000000000000005 = 5e-19: half of the last digit.
    const up = summarizePosition(
      'v',
      { depositedShares: '1', outflowShares: '0', depositAmount: '0', outflowAmount: '0', firstDepositAt: at },
      { sharePrice: '0.000000000000000001', baseAssetPriceUsd: '0.5' },
    )
    expect(up?.positionValueUsd).toBe('0.000000000000000001')
    // 5e-19 − 1e-18 = −5e-19: half of the last digit, below zero.
    const down = summarizePosition(
      'v',
      { depositedShares: '1', outflowShares: '0', depositAmount: '0.000000000000000001', outflowAmount: '0', firstDepositAt: at },
      { sharePrice: '0.0000000000000000005', baseAssetPriceUsd: '1' },
    )
    expect(down?.allTimeEarned).toBe('-0.000000000000000001')
    // 4e-19 rounds to zero, shown as "0".
    const zero = summarizePosition(
      'v',
      { depositedShares: '1', outflowShares: '0', depositAmount: '0', outflowAmount: '0', firstDepositAt: at },
      { sharePrice: '0.0000000000000000004', baseAssetPriceUsd: '1' },
    )
    expect(zero).toMatchObject({ positionValueUsd: '0', allTimeEarned: '0' })
  })
  it('a fully withdrawn position is closed, with value "0" (never "-0")', () => {
    const s = summarizePosition(
      'v',
      { depositedShares: '100', outflowShares: '100', depositAmount: '100', outflowAmount: '105', firstDepositAt: new Date(0) },
      { sharePrice: '1', baseAssetPriceUsd: '1' },
    )
    expect(s).toMatchObject({ shareBalance: '0', positionValueUsd: '0', allTimeEarned: '5' })
    expect(isOpen(s!)).toBe(false)
  })
})

describe('redeem rules', () => {
  it('averages delays in whole seconds, rounded down; 0 without history', () => {
    expect(averageRedeemDelaySeconds(0n, 0n)).toBe(0)
    expect(averageRedeemDelaySeconds(184_703_749n, 6n)).toBe(30783) // 30783.958…
    expect(averageRedeemDelaySeconds(2_999n, 1n)).toBe(2)
    expect(averageRedeemDelaySeconds(3_000n, 1n)).toBe(3)
  })
  it('counts redeems completed in the 90 days up to now, both ends included', () => {
    expect(redeemDelayWindow(new Date('2026-11-21T12:00:00.000Z'))).toEqual({
      from: new Date('2026-08-23T12:00:00.000Z'),
      to: new Date('2026-11-21T12:00:00.000Z'),
    })
  })
  it('sums amounts exactly', () => {
    expect(sumAmounts([])).toBe('0')
    expect(sumAmounts(['1234567.123456789012345678', '0.000000000000000001', '0.100000000000000000'])).toBe('1234567.223456789012345679')
  })
})
