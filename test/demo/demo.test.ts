import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import { Decimal } from '../../src/core/decimal.js'
import { DEMO_HISTORY_DAYS, DEMO_NOW, DEMO_SPIKE, demoSpikeTime, demoWallets, generateDemoDataset } from '../../src/demo/dataset.js'
import { demoHintsFromDatabase, seedDemoIfEmpty } from '../../src/demo/seed.js'
import { type ImportDocument, validateImportDocument } from '../../src/importer/document.js'
import { testBackend, testDatabase } from '../support/db.js'

const now = new Date('2026-11-21T12:00:00.000Z')
const DAY = 86_400_000

describe('demo dataset', () => {
  let doc: ImportDocument
  beforeAll(() => {
    doc = generateDemoDataset({ now })
  })

  it('is deterministic in seed and now', () => {
    expect(generateDemoDataset({ now })).toEqual(doc)
    expect(generateDemoDataset({ now: new Date(now.getTime() + 59 * 60_000) })).toEqual(doc) // hour-aligned
    expect(generateDemoDataset()).toEqual(generateDemoDataset({ seed: 42, now: DEMO_NOW }))
    const other = generateDemoDataset({ seed: 7, now })
    expect(other.transactions[0]).not.toEqual(doc.transactions[0])
    expect(demoWallets(7)).not.toEqual(demoWallets(42))
  })

  it('is already valid and canonical', () => {
    expect(validateImportDocument(doc)).toEqual(doc)
  })

  it('covers every chain, status, transaction type and status a client should see', () => {
    expect(doc.vaults.length).toBeGreaterThanOrEqual(8)
    expect(new Set(doc.vaults.map((v) => v.status))).toEqual(new Set(['active', 'paused', 'closed']))
    expect(new Set(doc.vaults.map((v) => v.chain)).size).toBeGreaterThanOrEqual(3)
    expect(doc.vaults.some((v) => v.chain_id === null) && doc.vaults.some((v) => v.mgmt_fee_bps === null && v.description === null)).toBe(true)
    const kinds = new Set(doc.transactions.map((t) => `${t.type}/${t.status}`))
    for (const type of ['deposit', 'withdraw', 'redeem'])
      for (const status of ['pending', 'completed', 'failed', 'cancelled']) expect(kinds, `${type}/${status}`).toContain(`${type}/${status}`)
    expect(doc.transactions.length).toBeGreaterThanOrEqual(20_000)
    expect(doc.transactions.length).toBeLessThanOrEqual(30_000)
    expect(new Set(doc.transactions.map((t) => t.address)).size).toBeGreaterThanOrEqual(300)
  })

  it('has sizes a real vault could have: a USD TVL from $1M to $1B (0 when closed), no deposit above $25M', () => {
    const usd = new Map(doc.vaults.map((v) => [v.id, new Decimal(v.base_asset_price_usd!)]))
    for (const v of doc.vaults) {
      const tvlUsd = new Decimal(v.tvl).times(usd.get(v.id)!)
      if (v.status === 'closed') expect(tvlUsd.toFixed(), v.id).toBe('0')
      else expect(tvlUsd.gte(1e6) && tvlUsd.lte(1e9), `${v.id}: $${tvlUsd.toFixed(0)}`).toBe(true)
    }
    const largest = Decimal.max(...doc.transactions.filter((t) => t.type === 'deposit').map((t) => new Decimal(t.amount).times(usd.get(t.vault_id)!)))
    expect(largest.lte(25e6), `$${largest.toFixed(0)}`).toBe(true)
  })

  it('has pending redeems and recently completed redeems, so the average redeem delay is meaningful', () => {
    const pending = doc.transactions.filter((t) => t.type === 'redeem' && t.status === 'pending')
    expect(pending.length).toBeGreaterThan(10)
    const recent = doc.transactions.filter((t) => t.type === 'redeem' && t.status === 'completed' && Date.parse(t.completed_at!) > now.getTime() - 90 * DAY)
    expect(recent.length).toBeGreaterThan(500)
    for (const t of recent) expect(Date.parse(t.completed_at!)).toBeGreaterThan(Date.parse(t.timestamp))
    const lastMs = now.getTime()
    expect(doc.transactions.every((t) => Date.parse(t.timestamp) <= lastMs && (t.completed_at === null || Date.parse(t.completed_at) <= lastMs))).toBe(true)
  })

  it('never lets a wallet spend shares it does not hold', () => {
    const balances = new Map<string, Decimal>()
    for (const t of doc.transactions) {
      const key = `${t.address} ${t.vault_id}`
      const b = balances.get(key) ?? new Decimal(0)
      if (t.type === 'deposit' && t.status === 'completed') balances.set(key, b.plus(t.shares))
      else if (t.type !== 'deposit' && (t.status === 'completed' || t.status === 'pending')) {
        expect(b.gte(t.shares), `${t.id}`).toBe(true)
        balances.set(key, b.minus(t.shares))
      }
    }
    const closed = doc.vaults.find((v) => v.status === 'closed')!
    expect([...balances].filter(([k, b]) => k.endsWith(` ${closed.id}`) && !b.isZero())).toEqual([])
  })

  it('has a year of smoothly drifting snapshots whose weights sum to exactly 100', () => {
    const allocations = doc.compositions.reduce((n, c) => n + c.positions.length, 0)
    expect(allocations).toBeLessThanOrEqual(60_000)
    const perVault = new Map<string, ImportDocument['compositions']>()
    for (const c of doc.compositions) perVault.get(c.vault_id)?.push(c) ?? perVault.set(c.vault_id, [c])
    expect(Math.max(...[...perVault.values()].map((s) => s.length))).toBeGreaterThanOrEqual(365 * 4)
    for (const c of doc.compositions) {
      const units = c.positions.map((p) => Math.round(p.pct * 10_000))
      expect(c.positions.map((p) => p.pct)).toEqual(units.map((u) => u / 10_000)) // 4 decimals
      expect(units.reduce((a, b) => a + b, 0)).toBe(1_000_000)
    }
    // Smooth: between consecutive 6-hourly snapshots no platform moves by more than a few points.
    const series = perVault.get('usdc-prime')!
    for (let i = 1; i < series.length; i++) {
      const prev = new Map(series[i - 1]!.positions.map((p) => [p.platform + p.asset, p.pct]))
      for (const p of series[i]!.positions) expect(Math.abs(p.pct - (prev.get(p.platform + p.asset) ?? 0))).toBeLessThan(5)
    }
    expect(new Set(doc.compositions.flatMap((c) => c.positions.map((p) => p.platform))).size).toBeGreaterThanOrEqual(6)
  })

  it("has two years of hourly vault snapshots ending at each vault's live values", () => {
    const HOUR = 3_600_000
    for (const v of doc.vaults) {
      const history = doc.vault_snapshots.filter((s) => s.vault_id === v.id)
      const times = history.map((s) => Date.parse(s.as_of))
      expect(times[0], v.id).toBe(Math.floor(now.getTime() / HOUR) * HOUR - DEMO_HISTORY_DAYS * DAY)
      expect(
        times.every((t, i) => i === 0 || t - times[i - 1]! === HOUR),
        v.id,
      ).toBe(true)
      // Two years to now; the closed vault's ends when it closed (with nothing left in it).
      if (v.status !== 'closed') expect(history.length, v.id).toBe(DEMO_HISTORY_DAYS * 24 + 1)
      else expect([history.length > 300 * 24, history.at(-1)!.tvl]).toEqual([true, '0'])
      const last = history.at(-1)!
      expect([last.share_price, last.tvl, last.base_asset_price_usd], v.id).toEqual([v.share_price, v.tvl, v.base_asset_price_usd])
    }
  })

  it('drifts a few percent a year, has one vault losing money and exactly one spike past SPIKE_PCT (50 %)', () => {
    const HOURS_A_YEAR = 365 * 24
    const yearly = new Map<string, number>()
    for (const v of doc.vaults.filter((v) => v.status !== 'closed')) {
      const history = doc.vault_snapshots.filter((s) => s.vault_id === v.id)
      yearly.set(
        v.id,
        new Decimal(history.at(-1)!.share_price)
          .div(history.at(-1 - HOURS_A_YEAR)!.share_price)
          .minus(1)
          .times(100)
          .toNumber(),
      )
    }
    const losing = [...yearly].filter(([, pct]) => pct < 0).map(([id]) => id)
    expect(losing).toEqual(['hyper-wbtc-carry'])
    for (const [id, pct] of yearly) {
      if (id === 'hyper-wbtc-carry') continue
      expect(pct, id).toBeGreaterThan(2)
      expect(pct, id).toBeLessThan(10)
    }
    const spikes: string[] = []
    for (let i = 1; i < doc.vault_snapshots.length; i++) {
      const [a, b] = [doc.vault_snapshots[i - 1]!, doc.vault_snapshots[i]!]
      if (a.vault_id !== b.vault_id) continue
      const move = new Decimal(b.share_price).div(a.share_price).minus(1).abs()
      if (move.gt(0.5)) spikes.push(`${b.vault_id} ${b.as_of}`)
    }
    // 23:00 UTC, ten days back: the last snapshot of its day, so the 30d and 1y series show it.
    expect(spikes).toEqual([`${DEMO_SPIKE.vaultId} 2026-11-11T23:00:00.000Z`])
    expect(demoSpikeTime(now).toISOString()).toBe('2026-11-11T23:00:00.000Z')
  })
})

describe(`demo seeding (${testBackend})`, () => {
  let db: Database
  beforeAll(async () => {
    db = await testDatabase()
  })
  afterAll(() => db?.close())

  it('loads the whole dataset into an empty database, and only then', async () => {
    const expected = generateDemoDataset({ now })
    const result = await seedDemoIfEmpty(db.prisma, { now })
    expect(result).toEqual({
      seeded: true,
      counts: {
        vaults: expected.vaults.length,
        compositions: expected.compositions.length,
        vault_snapshots: expected.vault_snapshots.length,
        transactions: expected.transactions.length,
      },
      hints: expect.anything(),
    })
    // The first start suggests what every later start (reading the same data back) suggests.
    const hints = result.hints!
    expect(await demoHintsFromDatabase(db.prisma)).toEqual(hints)
    expect(expected.vaults.map((v) => v.id)).toEqual(expect.arrayContaining(hints.vaultIds))
    expect(hints.vaultIds).toHaveLength(Math.min(8, expected.vaults.length))
    expect(hints.wallets.map((w) => w.note.replace(/ in .*| \d+ transactions/, ''))).toEqual(['pending redeems', 'open position,', 'open position,'])
    const [pending, ...positions] = hints.wallets
    expect(
      expected.transactions.some((t) => t.address === pending!.address && t.vault_id === pending!.vaultId && t.type === 'redeem' && t.status === 'pending'),
    ).toBe(true)
    for (const p of positions) {
      expect(expected.transactions.some((t) => t.address === p.address && t.vault_id === p.vaultId && t.type === 'deposit' && t.status === 'completed')).toBe(
        true,
      )
    }
    expect(await db.prisma.allocation.count()).toBe(expected.compositions.reduce((n, c) => n + c.positions.length, 0))
    const sample = expected.transactions[1234]!
    const row = await db.prisma.transaction.findUniqueOrThrow({ where: { id: sample.id } })
    expect([row.amount.toFixed(), row.shares.toFixed(), row.timestamp.toISOString()]).toEqual([sample.amount, sample.shares, sample.timestamp])

    expect(await db.prisma.vaultSnapshot.count()).toBe(expected.vault_snapshots.length)
    // The last import's data is as new as its newest snapshot: the dataset's now.
    expect((await db.prisma.dataState.findUniqueOrThrow({ where: { id: 1 } })).dataAsOf?.toISOString()).toBe(now.toISOString())
    expect(await seedDemoIfEmpty(db.prisma, { now })).toEqual({ seeded: false })
    expect(await db.prisma.transaction.count()).toBe(expected.transactions.length)
    // The whole first-start load (140k snapshots): minutes on a machine shared by many test workers.
  }, 300_000)
})
