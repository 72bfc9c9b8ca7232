import { describe, expect, it } from 'vitest'
import { assembleSeries, floorToBucket, groupAllocations, seriesWindow, type Allocation, type SeriesRow } from '../../src/vaults/composition.js'

const alloc = (platform: string, asset: string, pct: number, apyEstPct: number, symbol = asset.slice(0, 4).toUpperCase()): Allocation => ({
  platform,
  asset,
  symbol,
  pct,
  apyEstPct,
  icon: `https://icons.test/${platform}-${symbol}.svg`.toLowerCase(),
})

describe('groupAllocations', () => {
  const snapshot = [
    alloc('Aave', 'USD Coin', 30, 4, 'USDC'),
    alloc('Aave', 'Dai', 10, 6, 'DAI'),
    alloc('Morpho', 'USD Coin', 25, 5, 'USDC'),
    alloc('Compound', 'Dai', 20, 3, 'DAI'),
    alloc('Spark', 'Dai', 15, 7, 'DAI'),
  ]

  it('by platform: sums pct, weights the APY by pct, takes the largest member icon, and marks differing asset and symbol "mixed"', () => {
    expect(groupAllocations(snapshot, 'platform')).toEqual([
      { platform: 'Aave', asset: 'mixed', symbol: 'mixed', pct: 40, apyEstPct: 4.5, icon: 'https://icons.test/aave-usdc.svg' },
      { platform: 'Morpho', asset: 'USD Coin', symbol: 'USDC', pct: 25, apyEstPct: 5, icon: 'https://icons.test/morpho-usdc.svg' },
      { platform: 'Compound', asset: 'Dai', symbol: 'DAI', pct: 20, apyEstPct: 3, icon: 'https://icons.test/compound-dai.svg' },
      { platform: 'Spark', asset: 'Dai', symbol: 'DAI', pct: 15, apyEstPct: 7, icon: 'https://icons.test/spark-dai.svg' },
    ])
  })

  it('by asset: marks differing platforms "mixed" and keeps the asset symbol', () => {
    // USD Coin: (30×4 + 25×5) / 55 = 4.454545…; Dai: (10×6 + 20×3 + 15×7) / 45 = 5
    expect(groupAllocations(snapshot, 'asset')).toEqual([
      { platform: 'mixed', asset: 'USD Coin', symbol: 'USDC', pct: 55, apyEstPct: 4.454545, icon: 'https://icons.test/aave-usdc.svg' },
      { platform: 'mixed', asset: 'Dai', symbol: 'DAI', pct: 45, apyEstPct: 5, icon: 'https://icons.test/compound-dai.svg' },
    ])
  })

  it('keeps a common value when every member agrees', () => {
    const positions = groupAllocations([alloc('Aave', 'USD Coin', 10, 4, 'USDC'), alloc('Morpho', 'USD Coin', 10, 4, 'USDC')], 'asset')
    expect(positions).toEqual([{ platform: 'mixed', asset: 'USD Coin', symbol: 'USDC', pct: 20, apyEstPct: 4, icon: 'https://icons.test/aave-usdc.svg' }])
    expect(groupAllocations([alloc('Aave', 'USD Coin', 10, 4, 'USDC'), alloc('Aave', 'USD Coin v2', 5, 4, 'USDC')], 'platform')[0]).toMatchObject({
      asset: 'mixed',
      symbol: 'USDC',
    })
  })

  it('orders by pct desc, then by name in code-point order', () => {
    const positions = groupAllocations([alloc('b', 'x', 10, 1), alloc('B', 'x', 10, 1), alloc('a', 'x', 10, 1), alloc('c', 'x', 70, 1)], 'platform')
    expect(positions.map((p) => p.platform)).toEqual(['c', 'B', 'a', 'b'])
  })

  it('breaks an icon tie between equal members by platform, then asset', () => {
    const [aave] = groupAllocations([alloc('Aave', 'Dai', 10, 1, 'DAI'), alloc('Aave', 'Ageur', 10, 1, 'AGEU')], 'platform')
    expect(aave!.icon).toBe('https://icons.test/aave-ageu.svg')
  })

  it('adds in decimal and rounds once to 6 places', () => {
    const [p] = groupAllocations([alloc('Aave', 'A', 0.1, 1), alloc('Aave', 'B', 0.2, 2)], 'platform')
    expect(p!.pct).toBe(0.3) // not 0.30000000000000004
    expect(p!.apyEstPct).toBe(1.666667)
    expect(groupAllocations([alloc('Aave', 'A', 12.3456789, 1)], 'platform')[0]!.pct).toBe(12.345679)
  })

  it('takes the plain mean APY of a group that weighs nothing', () => {
    expect(groupAllocations([alloc('Aave', 'A', 0, 2), alloc('Aave', 'B', 0, 5)], 'platform')[0]).toMatchObject({ pct: 0, apyEstPct: 3.5 })
  })

  it('answers no positions for an empty snapshot', () => {
    expect(groupAllocations([], 'asset')).toEqual([])
  })
})

describe('series windows', () => {
  const now = new Date('2026-11-21T12:34:56.789Z') // a Saturday

  // The end is exclusive: just past now, so a snapshot taken at now still counts (storage keeps milliseconds).
  const end = new Date(now.getTime() + 1)

  it('ends at now, with the newest bucket the one holding now, on a grid fixed in UTC', () => {
    expect(seriesWindow('7d', now)).toEqual({
      stepMs: 3_600_000,
      firstStart: new Date('2026-11-14T13:00:00.000Z'), // 167 hours before the newest bucket: 168 buckets
      lastStart: new Date('2026-11-21T12:00:00.000Z'),
      end,
    })
    expect(seriesWindow('30d', now)).toEqual({
      stepMs: 21_600_000,
      firstStart: new Date('2026-10-22T18:00:00.000Z'), // 119 × 6 h earlier: 120 buckets
      lastStart: new Date('2026-11-21T12:00:00.000Z'),
      end,
    })
    expect(seriesWindow('1y', now)).toEqual({
      stepMs: 86_400_000,
      firstStart: new Date('2025-11-22T00:00:00.000Z'), // 364 days earlier: 365 buckets
      lastStart: new Date('2026-11-21T00:00:00.000Z'),
      end,
    })
    expect(seriesWindow('all', now)).toEqual({
      stepMs: 604_800_000,
      firstStart: null,
      lastStart: new Date('2026-11-16T00:00:00.000Z'), // the Monday before
      end,
    })
  })

  it('puts a boundary instant into the bucket it opens, also before the grid origin', () => {
    const hour = 3_600_000
    expect(floorToBucket(Date.parse('2026-11-21T12:00:00.000Z'), hour)).toBe(Date.parse('2026-11-21T12:00:00.000Z'))
    expect(floorToBucket(Date.parse('2026-11-21T11:59:59.999Z'), hour)).toBe(Date.parse('2026-11-21T11:00:00.000Z'))
    expect(floorToBucket(Date.parse('1999-12-31T23:30:00.000Z'), 7 * 24 * hour)).toBe(Date.parse('1999-12-27T00:00:00.000Z')) // a Monday
  })
})

describe('assembleSeries', () => {
  const t1 = new Date('2026-11-21T10:00:00.000Z')
  const t2 = new Date('2026-11-21T11:00:00.000Z')
  const t3 = new Date('2026-11-21T12:00:00.000Z')
  const row = (t: Date, label: string | null, weight: number | null): SeriesRow => ({ vault_id: 'v', t, label, weight })

  it('orders labels by weight in the newest point, then name, and aligns every point with zeros where a group is absent', () => {
    const rows = [
      row(t1, 'Compound', 50),
      row(t1, 'Aave', 50),
      row(t2, null, null), // a snapshot without positions
      row(t3, 'Spark', 35),
      row(t3, 'Morpho', 30),
      row(t3, 'Aave', 35),
    ]
    expect(assembleSeries(rows)).toEqual({
      labels: ['Aave', 'Spark', 'Morpho', 'Compound'],
      points: [
        { t: t1, weightsPct: [50, 0, 0, 50] },
        { t: t2, weightsPct: [0, 0, 0, 0] },
        { t: t3, weightsPct: [35, 35, 30, 0] },
      ],
    })
  })

  it('answers no labels and no points without rows', () => {
    expect(assembleSeries([])).toEqual({ labels: [], points: [] })
  })
})
