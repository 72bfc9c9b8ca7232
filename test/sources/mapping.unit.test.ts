import { describe, expect, it } from 'vitest'
import { nextRange, planTimedSnapshots } from '../../src/sources/collect.js'
import type { Address } from '../../src/sources/config.js'
import {
  blockTime,
  mapVaultEvents,
  markClaimable,
  snapshotOf,
  unitsToAmount,
  type BlockRef,
  type Hex,
  type MappedVault,
  type OpenRedeem,
  type VaultEvent,
  type VaultState,
} from '../../src/sources/mapping.js'

// The mapping from vault events and states to the importer's records, on hand-made inputs with
// hand-computed outputs.

const VAULT: Address = '0x00000000000000000000000000000000000000aa'
const ALICE: Address = '0x00000000000000000000000000000000000a11ce'
const BOB: Address = '0x0000000000000000000000000000000000000b0b'
const CAROL: Address = '0x00000000000000000000000000000000000ca201'
const tx = (n: number): Hex => `0x${n.toString(16).padStart(64, '0')}`
const hash = (n: number): Hex => `0x${(n + 0xbb00).toString(16).padStart(64, '0')}`

const T0 = 1_767_225_600n // 2026-01-01T00:00:00Z
const block = (n: number): BlockRef => ({ number: BigInt(n), hash: hash(n), timestamp: T0 + BigInt(n) * 12n })
const blocks = (...ns: number[]) => new Map(ns.map((n) => [BigInt(n), block(n)]))
const at = (n: number) => new Date(Number(T0 + BigInt(n) * 12n) * 1000).toISOString()

const usdc4626: MappedVault = { id: 'v4626', chainId: 8453, kind: 'erc4626', assetDecimals: 6, vaultDecimals: 18 }
const usdc7540: MappedVault = { ...usdc4626, id: 'v7540', kind: 'erc7540' }
const E18 = 10n ** 18n

const base = (n: number, logIndex: number, txn = n) => ({ vault: VAULT, blockNumber: BigInt(n), blockHash: hash(n), txHash: tx(txn), logIndex })

const state = (n: number, redeem: [bigint, bigint][] = []): VaultState => ({
  blockNumber: BigInt(n),
  totalAssets: 0n,
  totalSupply: 0n,
  assetsPerShare: 0n,
  redeemAssets: new Map(redeem),
})

describe('amounts', () => {
  it('converts base units exactly, without trailing zeros', () => {
    expect(unitsToAmount(0n, 6)).toBe('0')
    expect(unitsToAmount(1n, 6)).toBe('0.000001')
    expect(unitsToAmount(1_500_250_000n, 6)).toBe('1500.25')
    expect(unitsToAmount(1_000_000n, 6)).toBe('1')
    expect(unitsToAmount(123_456_789_012_345_678_901_234_567_890n, 18)).toBe('123456789012.34567890123456789')
    expect(unitsToAmount(2n ** 256n - 1n, 18)).toBe('115792089237316195423570985008687907853269984665640564039457.584007913129639935')
    expect(unitsToAmount(42n, 0)).toBe('42')
  })

  it('rounds a token of more than 18 decimals once, half away from zero, to 18', () => {
    expect(unitsToAmount(12_345_678_901_234_567_895n, 19)).toBe('1.23456789012345679') // …789|5 → …790
    expect(unitsToAmount(15n, 20)).toBe('0') // 0.00000000000000000015 → 0
    expect(unitsToAmount(50n, 20)).toBe('0.000000000000000001') // exactly half → away from zero
  })

  it('stamps block times as RFC 3339 UTC with milliseconds', () => {
    expect(blockTime(T0)).toBe('2026-01-01T00:00:00.000Z')
    expect(blockTime(T0 + 86_399n)).toBe('2026-01-01T23:59:59.000Z')
  })
})

describe('snapshots', () => {
  it('share price = convertToAssets(one whole share) over 10^asset decimals; tvl = totalAssets', () => {
    const s: VaultState = {
      blockNumber: 7n,
      totalAssets: 1_618_049_999n,
      totalSupply: 1_599_604_303_647_916_507_101n,
      assetsPerShare: 1_011_531n,
      redeemAssets: new Map(),
    }
    expect(snapshotOf(usdc4626, s, block(7))).toEqual({
      vault_id: 'v4626',
      as_of: at(7),
      share_price: '1.011531',
      tvl: '1618.049999',
      base_asset_price_usd: null,
    })
    // an 18-decimal asset under 18-decimal shares
    const weth: MappedVault = { ...usdc4626, assetDecimals: 18 }
    expect(snapshotOf(weth, { ...s, totalAssets: 10n ** 21n + 1n, assetsPerShare: 1_050_000_000_000_000_001n }, block(7))).toMatchObject({
      share_price: '1.050000000000000001',
      tvl: '1000.000000000000000001',
    })
  })
})

describe('events → transactions', () => {
  it('a deposit and a withdraw belong to the owner of the shares, not the sender or receiver', () => {
    const events: VaultEvent[] = [
      { ...base(10, 3), type: 'deposit', sender: BOB, owner: ALICE, assets: 250_500_000n, shares: 247_644_311_556_690_513_290n },
      { ...base(11, 0), type: 'withdraw', sender: CAROL, receiver: CAROL, owner: BOB, assets: 50_000_001n, shares: 49_430_003_295_324_699_486n },
    ]
    const out = mapVaultEvents({ vault: usdc4626, events, blocks: blocks(10, 11), states: new Map(), open: [] })
    expect(out).toEqual({
      transactions: [
        {
          id: `8453:${tx(10)}:3`,
          vault_id: 'v4626',
          tx_hash: tx(10),
          timestamp: at(10),
          address: ALICE,
          type: 'deposit',
          status: 'completed',
          amount: '250.5',
          shares: '247.64431155669051329',
          completed_at: at(10),
        },
        {
          id: `8453:${tx(11)}:0`,
          vault_id: 'v4626',
          tx_hash: tx(11),
          timestamp: at(11),
          address: BOB,
          type: 'withdraw',
          status: 'completed',
          amount: '50.000001',
          shares: '49.430003295324699486',
          completed_at: at(11),
        },
      ],
      open: [],
      warnings: [],
    })
  })

  it('sorts by block and log index, and writes ids and hashes lowercase', () => {
    const upper = `0x${'AB'.repeat(32)}` as Hex
    const events: VaultEvent[] = [
      { ...base(12, 1), txHash: upper, type: 'deposit', sender: ALICE, owner: ALICE, assets: 2n, shares: 2n },
      { ...base(12, 0), type: 'deposit', sender: ALICE, owner: ALICE, assets: 1n, shares: 1n },
      { ...base(11, 9), type: 'deposit', sender: ALICE, owner: ALICE, assets: 3n, shares: 3n },
    ]
    const out = mapVaultEvents({ vault: usdc4626, events, blocks: blocks(11, 12), states: new Map(), open: [] })
    expect(out.transactions.map((t) => [t.id, t.amount])).toEqual([
      [`8453:${tx(11)}:9`, '0.000003'],
      [`8453:${tx(12)}:0`, '0.000001'],
      [`8453:${upper.toLowerCase()}:1`, '0.000002'],
    ])
  })

  it('an ERC-7540 request is a pending redeem worth convertToAssets(shares) at its block; the claim completes it', () => {
    const request: VaultEvent = { ...base(19, 4), type: 'redeem_request', controller: CAROL, owner: CAROL, requestId: 0n, sender: CAROL, shares: 1000n * E18 }
    const first = mapVaultEvents({
      vault: usdc7540,
      events: [request],
      blocks: blocks(19),
      states: new Map([[19n, state(19, [[1000n * E18, 1_009_999_999n]])]]),
      open: [],
    })
    const pending = {
      id: `8453:${tx(19)}:4`,
      vault_id: 'v7540',
      tx_hash: tx(19),
      timestamp: at(19),
      address: CAROL,
      type: 'redeem',
      status: 'pending',
      amount: '1009.999999',
      shares: '1000',
      completed_at: null,
    } as const
    expect(first).toEqual({
      transactions: [pending],
      open: [{ transaction: pending, controller: CAROL, remainingShares: (1000n * E18).toString(), requestId: '0' }],
      warnings: [],
    })

    // Fulfilment emits nothing. Two claims later: 600 shares, then 400. The first leaves it pending.
    const claim1: VaultEvent = { ...base(25, 0), type: 'withdraw', sender: CAROL, receiver: CAROL, owner: CAROL, assets: 605_999_999n, shares: 600n * E18 }
    const second = mapVaultEvents({ vault: usdc7540, events: [claim1], blocks: blocks(25), states: new Map(), open: first.open })
    expect(second).toEqual({
      transactions: [],
      open: [{ transaction: pending, controller: CAROL, remainingShares: (400n * E18).toString(), requestId: '0' }],
      warnings: [],
    })
    const claim2: VaultEvent = { ...base(26, 0), type: 'withdraw', sender: CAROL, receiver: BOB, owner: CAROL, assets: 404_000_000n, shares: 400n * E18 }
    const third = mapVaultEvents({ vault: usdc7540, events: [claim2], blocks: blocks(26), states: new Map(), open: second.open })
    // same id, tx hash, amount and time as the request; no withdraw of its own
    expect(third).toEqual({ transactions: [{ ...pending, status: 'completed', completed_at: at(26) }], open: [], warnings: [] })
    // The input list was not changed.
    expect(second.open[0]!.remainingShares).toBe((400n * E18).toString())
  })

  it('marks open requests claimable from claimableRedeemRequest: per request id, or in request order when a controller aggregates them (id 0)', () => {
    const open = (n: number, controller: Address, requestId: string | undefined, shares: bigint, status: 'pending' | 'claimable' = 'pending'): OpenRedeem => ({
      transaction: {
        id: `r${n}`,
        vault_id: 'v7540',
        tx_hash: tx(n),
        timestamp: at(n),
        address: controller,
        type: 'redeem',
        status,
        amount: '1',
        shares: '1',
        completed_at: null,
      },
      controller,
      remainingShares: shares.toString(),
      ...(requestId === undefined ? {} : { requestId }),
    })
    const list = [
      open(1, CAROL, '0', 3n * E18), // Carol's aggregated requests: 3, then 2 shares
      open(2, BOB, '7', 5n * E18), // Bob's request 7
      open(3, CAROL, '0', 2n * E18),
      open(4, BOB, '8', 1n * E18), // Bob's request 8: nothing claimable
      open(5, ALICE, undefined, 1n * E18), // recorded before request ids were kept: not asked
      open(6, ALICE, '0', 1n * E18, 'claimable'), // already claimable: stays so
    ]
    const claimable = new Map<string, bigint>([
      [`0:${CAROL}`, 3n * E18], // exactly Carol's first request: the second is not reached
      [`7:${BOB}`, 1n], // any amount > 0 of a request of its own
      [`8:${BOB}`, 0n],
      [`0:${ALICE}`, 0n],
    ])
    const asked: string[] = []
    const out = markClaimable(list, (id, controller) => {
      asked.push(`${id}:${controller}`)
      return claimable.get(`${id}:${controller}`)
    })
    expect(out.changed.map((t) => [t.id, t.status])).toEqual([
      ['r1', 'claimable'],
      ['r2', 'claimable'],
    ])
    expect(out.open.map((o) => [o.transaction.id, o.transaction.status])).toEqual([
      ['r1', 'claimable'],
      ['r2', 'claimable'],
      ['r3', 'pending'],
      ['r4', 'pending'],
      ['r5', 'pending'],
      ['r6', 'claimable'],
    ])
    expect(asked).toEqual([`0:${CAROL}`, `7:${BOB}`, `0:${CAROL}`, `8:${BOB}`])
    // One more share claimable for Carol reaches her second request too.
    claimable.set(`0:${CAROL}`, 3n * E18 + 1n)
    expect(markClaimable(out.open, (id, c) => claimable.get(`${id}:${c}`)).changed.map((t) => t.id)).toEqual(['r3'])
    // The input list was not changed.
    expect(list[0]!.transaction.status).toBe('pending')
  })

  it("claims complete a controller's requests in request order; others' requests stay pending", () => {
    const events: VaultEvent[] = [
      // Alice asks for 3 shares, controlled by Carol; Bob asks for 5 of his own; Alice 2 more.
      { ...base(30, 0), type: 'redeem_request', controller: CAROL, owner: ALICE, requestId: 0n, sender: ALICE, shares: 3n * E18 },
      { ...base(31, 0), type: 'redeem_request', controller: BOB, owner: BOB, requestId: 0n, sender: BOB, shares: 5n * E18 },
      { ...base(31, 1), type: 'redeem_request', controller: CAROL, owner: ALICE, requestId: 0n, sender: CAROL, shares: 2n * E18 },
      // Carol claims 4 shares: the first request completes, the second has 1 share left.
      { ...base(33, 2), type: 'withdraw', sender: CAROL, receiver: CAROL, owner: CAROL, assets: 4_400_000n, shares: 4n * E18 },
    ]
    const states = new Map([
      [30n, state(30, [[3n * E18, 3_300_000n]])],
      [
        31n,
        state(31, [
          [5n * E18, 5_500_000n],
          [2n * E18, 2_200_000n],
        ]),
      ],
    ])
    const out = mapVaultEvents({ vault: usdc7540, events, blocks: blocks(30, 31, 33), states, open: [] })
    expect(out.transactions.map((t) => [t.id, t.address, t.amount, t.status, t.completed_at])).toEqual([
      [`8453:${tx(30)}:0`, ALICE, '3.3', 'completed', at(33)],
      [`8453:${tx(31)}:0`, BOB, '5.5', 'pending', null],
      [`8453:${tx(31)}:1`, ALICE, '2.2', 'pending', null],
    ])
    expect(out.open.map((o) => [o.transaction.id, o.controller, o.remainingShares])).toEqual([
      [`8453:${tx(31)}:0`, BOB, (5n * E18).toString()],
      [`8453:${tx(31)}:1`, CAROL, (1n * E18).toString()],
    ])
    expect(out.warnings).toEqual([])
  })

  it('a claim of a request made before the first followed block is a completed redeem of its own', () => {
    const claim: VaultEvent = {
      ...base(40, 7),
      type: 'withdraw',
      sender: BOB,
      receiver: BOB,
      owner: BOB,
      assets: 1_500_000n,
      shares: 1_400_000_000_000_000_000n,
    }
    const out = mapVaultEvents({ vault: usdc7540, events: [claim], blocks: blocks(40), states: new Map(), open: [] })
    expect(out.transactions).toEqual([
      {
        id: `8453:${tx(40)}:7`,
        vault_id: 'v7540',
        tx_hash: tx(40),
        timestamp: at(40),
        address: BOB,
        type: 'redeem',
        status: 'completed',
        amount: '1.5',
        shares: '1.4',
        completed_at: at(40),
      },
    ])
    expect(out.warnings).toEqual([`8453:${tx(40)}:7: claim of 1400000000000000000 shares by ${BOB} without a known request; recorded as a completed redeem`])
  })

  it('a claim beyond the known requests completes them and warns of the excess', () => {
    const open: OpenRedeem[] = [
      {
        transaction: {
          id: 'x',
          vault_id: 'v7540',
          tx_hash: tx(1),
          timestamp: at(1),
          address: BOB,
          type: 'redeem',
          status: 'pending',
          amount: '1',
          shares: '1',
          completed_at: null,
        },
        controller: BOB,
        remainingShares: E18.toString(),
      },
    ]
    const claim: VaultEvent = { ...base(41, 0), type: 'withdraw', sender: BOB, receiver: BOB, owner: BOB, assets: 3_000_000n, shares: 3n * E18 }
    const out = mapVaultEvents({ vault: usdc7540, events: [claim], blocks: blocks(41), states: new Map(), open })
    expect(out.transactions.map((t) => [t.id, t.status, t.completed_at])).toEqual([['x', 'completed', at(41)]])
    expect(out.warnings).toEqual([`8453:${tx(41)}:0: claim of 2000000000000000000 shares more than ${BOB}'s known requests; the excess is not recorded`])
  })

  it('ignores a RedeemRequest from a vault configured as ERC-4626, with a warning', () => {
    const request: VaultEvent = { ...base(50, 1), type: 'redeem_request', controller: BOB, owner: BOB, requestId: 0n, sender: BOB, shares: E18 }
    const out = mapVaultEvents({ vault: usdc4626, events: [request], blocks: blocks(50), states: new Map(), open: [] })
    expect(out).toEqual({
      transactions: [],
      open: [],
      warnings: [`8453:${tx(50)}:1: RedeemRequest from vault "v4626", which is configured as erc4626: ignored`],
    })
  })

  it('refuses to guess when the caller did not read what a record needs', () => {
    const request: VaultEvent = { ...base(60, 0), type: 'redeem_request', controller: BOB, owner: BOB, requestId: 0n, sender: BOB, shares: E18 }
    expect(() => mapVaultEvents({ vault: usdc7540, events: [request], blocks: blocks(60), states: new Map(), open: [] })).toThrow(
      `mapVaultEvents: no convertToAssets(${E18}) at block 60`,
    )
    expect(() => mapVaultEvents({ vault: usdc7540, events: [request], blocks: new Map(), states: new Map(), open: [] })).toThrow(
      'mapVaultEvents: no header for block 60',
    )
  })
})

describe('ranges and timed snapshots', () => {
  it('cuts the way to the confirmed head into bounded ranges', () => {
    expect(nextRange(99n, 100n, 2000)).toEqual({ from: 100n, to: 100n })
    expect(nextRange(100n, 100n, 2000)).toBeNull()
    expect(nextRange(0n, 10_000n, 2000)).toEqual({ from: 1n, to: 2000n })
  })

  // 12-second blocks: an hour is 300 blocks.
  const hour = 3_600_000

  it('takes the first snapshot at the first block, then one per interval at the estimated block', () => {
    expect(planTimedSnapshots({ from: 1n, start: block(1), end: block(1000), lastSnapshotAt: null, intervalMs: hour })).toEqual([1n, 301n, 601n, 901n])
  })

  it('continues from the last snapshot, across ranges', () => {
    expect(planTimedSnapshots({ from: 1001n, start: block(1000), end: block(1200), lastSnapshotAt: at(901), intervalMs: hour })).toEqual([])
    expect(planTimedSnapshots({ from: 1001n, start: block(1000), end: block(1300), lastSnapshotAt: at(901), intervalMs: hour })).toEqual([1201n])
  })

  it('takes an overdue snapshot at once, then keeps the interval', () => {
    const yearAgo = new Date(Number(T0) * 1000 - 365 * 86_400_000).toISOString()
    expect(planTimedSnapshots({ from: 1001n, start: block(1000), end: block(1600), lastSnapshotAt: yearAgo, intervalMs: hour })).toEqual([1001n, 1300n, 1600n])
  })

  it('never plans two snapshots in one block, nor one outside the range', () => {
    // One-minute interval over 12-second blocks: every fifth block.
    expect(planTimedSnapshots({ from: 11n, start: block(10), end: block(30), lastSnapshotAt: at(10), intervalMs: 60_000 })).toEqual([15n, 20n, 25n, 30n])
    // An interval shorter than a block: one per block at most.
    expect(planTimedSnapshots({ from: 11n, start: block(10), end: block(13), lastSnapshotAt: at(10), intervalMs: 5000 })).toEqual([11n, 12n, 13n])
    // Uneven block times: the estimate is linear, the block's real time is what the snapshot says.
    const end = { ...block(20), timestamp: block(10).timestamp + 600n }
    expect(planTimedSnapshots({ from: 11n, start: block(10), end, lastSnapshotAt: at(10), intervalMs: 300_000 })).toEqual([15n, 20n])
  })
})
