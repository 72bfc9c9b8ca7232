import { Decimal, formatAmount } from '../core/decimal.js'
import type { TransactionStatus, TransactionType, VaultStatus } from '../generated/prisma/enums.js'
import {
  type ImportComposition,
  type ImportDocument,
  type ImportPosition,
  type ImportTransaction,
  type ImportVault,
  type ImportVaultSnapshot,
  vaultRecord,
} from '../importer/document.js'

// A deterministic, realistic-looking demo dataset: the same seed and `now` always give the same
// document. For money, floats only ever pick integers (unit counts); every amount string comes
// from integers scaled in Decimal, so no money passes through a JS number.

export const DEMO_SEED = 42
/** Default reference time; a running server passes its own clock so windows like "7d" end today. */
export const DEMO_NOW = new Date('2026-11-01T00:00:00.000Z')
export const DEMO_WALLET_COUNT = 400

const HOUR = 3_600_000
const DAY = 24 * HOUR

type Rng = () => number

/** mulberry32: tiny, fast, and good enough for demo data. */
function mulberry32(seed: number): Rng {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

const int = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1))
const chance = (rng: Rng, p: number) => rng() < p
const logUniform = (rng: Rng, lo: number, hi: number) => Math.exp(Math.log(lo) + rng() * (Math.log(hi) - Math.log(lo)))
const hex = (rng: Rng, digits: number) => {
  let s = ''
  while (s.length < digits)
    s += Math.floor(rng() * 0x1_0000_0000)
      .toString(16)
      .padStart(8, '0')
  return s.slice(0, digits)
}
const iso = (ms: number) => new Date(ms).toISOString()

interface PositionPlan {
  platform: string
  asset: string
  symbol: string
  weight: number
  apy: number
  /** Days before `now` when the position is opened / closed; absent = always held. */
  enterDaysAgo?: number
  exitDaysAgo?: number
}

interface VaultPlan {
  id: string
  name: string
  chain: string
  chainId: string | null
  symbol: string
  baseAsset: string
  decimals: number
  priceUsd: string
  status: VaultStatus
  ageDays: number
  /** Paused: no deposits since. Closed: no activity since (everyone has redeemed). */
  stoppedDaysAgo?: number
  yieldPct: number
  perfFeeBps: number
  mgmtFeeBps: number | null
  popularity: number
  depositRange: [number, number]
  redeemDelayHours: [number, number]
  extra: Pick<ImportVault, 'deposit_constraints' | 'withdraw_constraints' | 'description' | 'docs_url' | 'strategy_brief'> & { icons: boolean }
  positions: PositionPlan[]
}

const usdc = (platform: string, weight: number, apy: number, rest: Partial<PositionPlan> = {}): PositionPlan => ({
  platform,
  asset: 'USD Coin',
  symbol: 'USDC',
  weight,
  apy,
  ...rest,
})
const weth = (platform: string, weight: number, apy: number): PositionPlan => ({ platform, asset: 'Wrapped Ether', symbol: 'WETH', weight, apy })

const PLANS: VaultPlan[] = [
  {
    id: 'usdc-prime',
    name: 'Prime USDC',
    chain: 'ethereum',
    chainId: '1',
    symbol: 'vgUSDC',
    baseAsset: 'USDC',
    decimals: 6,
    priceUsd: '1',
    status: 'active',
    ageDays: 365,
    yieldPct: 6.4,
    perfFeeBps: 1000,
    mgmtFeeBps: 100,
    popularity: 10,
    depositRange: [50, 250_000],
    redeemDelayHours: [4, 30],
    extra: {
      deposit_constraints: { max_deposit: '5000000', min_deposit: '10', paused: false },
      withdraw_constraints: { instant_liquidity: true, instant_slippage_max_bps: 30, redeem_24h_threshold_pct_of_aum: 10, redeem_48h_above_threshold: true },
      description: 'Blue-chip USDC lending across Aave, Morpho and Compound with a small Pendle fixed-rate sleeve.',
      docs_url: 'https://docs.example.com/vaults/usdc-prime',
      strategy_brief: 'Rebalances toward the best risk-adjusted supply rate; at most 15% in fixed-rate PTs.',
      icons: true,
    },
    positions: [
      usdc('aave', 30, 4.8),
      usdc('morpho', 28, 6.9),
      usdc('compound', 15, 5.2),
      { platform: 'spark', asset: 'Savings Dai', symbol: 'sDAI', weight: 12, apy: 5.5 },
      { platform: 'pendle', asset: 'Pendle PT sUSDe 26 Mar 2027', symbol: 'PT-sUSDe-26MAR2027', weight: 10, apy: 11.8, enterDaysAgo: 160 },
      usdc('idle', 5, 0),
    ],
  },
  {
    id: 'weth-staking-plus',
    name: 'ETH Staking Plus',
    chain: 'ethereum',
    chainId: '1',
    symbol: 'vgWETH',
    baseAsset: 'WETH',
    decimals: 18,
    priceUsd: '3412.55',
    status: 'active',
    ageDays: 365,
    yieldPct: 3.3,
    perfFeeBps: 1500,
    mgmtFeeBps: 50,
    popularity: 7,
    depositRange: [0.02, 120],
    redeemDelayHours: [12, 60],
    extra: {
      deposit_constraints: { max_deposit: null, min_deposit: '0.01', paused: false },
      withdraw_constraints: { instant_liquidity: false, instant_slippage_max_bps: null, redeem_24h_threshold_pct_of_aum: 5, redeem_48h_above_threshold: true },
      description: 'Liquid staking and restaking tokens, hedged back to ETH.',
      docs_url: 'https://docs.example.com/vaults/weth-staking-plus',
      strategy_brief: null,
      icons: true,
    },
    positions: [
      { platform: 'lido', asset: 'Lido Wrapped Staked ETH', symbol: 'wstETH', weight: 35, apy: 3.1 },
      { platform: 'etherfi', asset: 'ether.fi Wrapped eETH', symbol: 'weETH', weight: 25, apy: 3.4 },
      weth('aave', 20, 2.2),
      weth('morpho', 15, 2.9),
      { platform: 'pendle', asset: 'Pendle PT weETH 31 Dec 2026', symbol: 'PT-weETH-31DEC2026', weight: 8, apy: 4.6, enterDaysAgo: 200, exitDaysAgo: 30 },
    ],
  },
  {
    id: 'arb-usdc-core',
    name: 'Arbitrum USDC Core',
    chain: 'arbitrum',
    chainId: '42161',
    symbol: 'vgUSDC.arb',
    baseAsset: 'USDC',
    decimals: 6,
    priceUsd: '1',
    status: 'active',
    ageDays: 330,
    yieldPct: 7.1,
    perfFeeBps: 1000,
    mgmtFeeBps: 0,
    popularity: 6,
    depositRange: [20, 120_000],
    redeemDelayHours: [2, 20],
    extra: {
      deposit_constraints: { max_deposit: '2000000', min_deposit: '5', paused: false },
      withdraw_constraints: { instant_liquidity: true, instant_slippage_max_bps: 50, redeem_24h_threshold_pct_of_aum: 15, redeem_48h_above_threshold: false },
      description: 'USDC money markets on Arbitrum.',
      docs_url: null,
      strategy_brief: 'Keeps 8% idle for instant withdrawals.',
      icons: true,
    },
    positions: [usdc('aave', 35, 4.9), usdc('compound', 25, 5.6), usdc('fluid', 20, 6.4), usdc('dolomite', 12, 7.9, { enterDaysAgo: 90 }), usdc('idle', 8, 0)],
  },
  {
    id: 'base-usdc-flex',
    name: 'Base USDC Flex',
    chain: 'base',
    chainId: '8453',
    symbol: 'vgUSDC.base',
    baseAsset: 'USDC',
    decimals: 6,
    priceUsd: '1',
    status: 'active',
    ageDays: 200,
    yieldPct: 7.6,
    perfFeeBps: 1200,
    mgmtFeeBps: null,
    popularity: 5,
    depositRange: [10, 60_000],
    redeemDelayHours: [1, 12],
    extra: {
      deposit_constraints: { max_deposit: null, min_deposit: null, paused: false },
      withdraw_constraints: { instant_liquidity: true, instant_slippage_max_bps: 25, redeem_24h_threshold_pct_of_aum: null, redeem_48h_above_threshold: null },
      description: null,
      docs_url: 'https://docs.example.com/vaults/base-usdc-flex',
      strategy_brief: null,
      icons: false,
    },
    positions: [usdc('morpho', 45, 7.2), usdc('aave', 25, 4.6), usdc('moonwell', 20, 5.9), usdc('euler', 10, 8.4)],
  },
  {
    id: 'hyper-wbtc-carry',
    name: 'HyperEVM BTC Carry',
    chain: 'hyperevm',
    chainId: null,
    symbol: 'vgBTC',
    baseAsset: 'WBTC',
    decimals: 8,
    priceUsd: '97250.4',
    status: 'paused',
    ageDays: 280,
    stoppedDaysAgo: 25,
    yieldPct: 2.1,
    perfFeeBps: 2000,
    mgmtFeeBps: 200,
    popularity: 3,
    depositRange: [0.001, 8],
    redeemDelayHours: [24, 72],
    extra: {
      deposit_constraints: { max_deposit: '250', min_deposit: '0.0005', paused: true },
      withdraw_constraints: {
        instant_liquidity: false,
        instant_slippage_max_bps: null,
        redeem_24h_threshold_pct_of_aum: 2.5,
        redeem_48h_above_threshold: true,
      },
      description: 'BTC lending and fixed-rate PTs on HyperEVM. Deposits paused during a risk review.',
      docs_url: null,
      strategy_brief: 'Paused: deposits are closed; redeems are processed as liquidity returns.',
      icons: true,
    },
    positions: [
      { platform: 'hyperlend', asset: 'Wrapped BTC', symbol: 'WBTC', weight: 45, apy: 1.2 },
      { platform: 'hypurrfi', asset: 'Wrapped BTC', symbol: 'WBTC', weight: 30, apy: 1.8 },
      { platform: 'pendle', asset: 'Pendle PT uBTC 26 Mar 2027', symbol: 'PT-uBTC-26MAR2027', weight: 25, apy: 4.5 },
    ],
  },
  {
    id: 'op-usdt-stable',
    name: 'Optimism USDT Stable',
    chain: 'optimism',
    chainId: '10',
    symbol: 'vgUSDT',
    baseAsset: 'USDT',
    decimals: 6,
    priceUsd: '1.0002',
    status: 'active',
    ageDays: 300,
    yieldPct: 5.8,
    perfFeeBps: 1000,
    mgmtFeeBps: 100,
    popularity: 4,
    depositRange: [10, 80_000],
    redeemDelayHours: [2, 24],
    extra: {
      deposit_constraints: { max_deposit: '1000000', min_deposit: '1', paused: false },
      withdraw_constraints: {
        instant_liquidity: null,
        instant_slippage_max_bps: null,
        redeem_24h_threshold_pct_of_aum: null,
        redeem_48h_above_threshold: null,
      },
      description: 'USDT lending plus a stable-stable LP on Optimism.',
      docs_url: 'https://docs.example.com/vaults/op-usdt-stable',
      strategy_brief: null,
      icons: false,
    },
    positions: [
      { platform: 'aave', asset: 'Tether USD', symbol: 'USDT', weight: 40, apy: 4.3 },
      { platform: 'compound', asset: 'Tether USD', symbol: 'USDT', weight: 30, apy: 5.1 },
      { platform: 'velodrome', asset: 'Velodrome USDC/USDT LP', symbol: 'sAMM-USDC/USDT', weight: 20, apy: 7.5 },
      { platform: 'idle', asset: 'Tether USD', symbol: 'USDT', weight: 10, apy: 0 },
    ],
  },
  {
    id: 'dai-savings-legacy',
    name: 'DAI Savings (legacy)',
    chain: 'ethereum',
    chainId: '1',
    symbol: 'vgDAI',
    baseAsset: 'DAI',
    decimals: 18,
    priceUsd: '0.9998',
    status: 'closed',
    ageDays: 365,
    stoppedDaysAgo: 75,
    yieldPct: 4.6,
    perfFeeBps: 1000,
    mgmtFeeBps: null,
    popularity: 4,
    depositRange: [100, 150_000],
    redeemDelayHours: [2, 18],
    extra: {
      deposit_constraints: { max_deposit: null, min_deposit: null, paused: true },
      withdraw_constraints: {
        instant_liquidity: null,
        instant_slippage_max_bps: null,
        redeem_24h_threshold_pct_of_aum: null,
        redeem_48h_above_threshold: null,
      },
      description: 'Retired after the migration to USDS; all positions have been redeemed.',
      docs_url: null,
      strategy_brief: null,
      icons: false,
    },
    positions: [
      { platform: 'spark', asset: 'Savings Dai', symbol: 'sDAI', weight: 50, apy: 5 },
      { platform: 'aave', asset: 'Dai Stablecoin', symbol: 'DAI', weight: 30, apy: 3.9 },
      { platform: 'compound', asset: 'Dai Stablecoin', symbol: 'DAI', weight: 20, apy: 4.1 },
    ],
  },
  {
    id: 'base-weth-lrt',
    name: 'Base LRT Basket',
    chain: 'base',
    chainId: '8453',
    symbol: 'vgLRT',
    baseAsset: 'WETH',
    decimals: 18,
    priceUsd: '3412.55',
    status: 'active',
    ageDays: 120,
    yieldPct: 3.7,
    perfFeeBps: 1500,
    mgmtFeeBps: 100,
    popularity: 3,
    depositRange: [0.01, 40],
    redeemDelayHours: [6, 40],
    extra: {
      deposit_constraints: { max_deposit: '5000', min_deposit: '0.005', paused: false },
      withdraw_constraints: { instant_liquidity: false, instant_slippage_max_bps: 80, redeem_24h_threshold_pct_of_aum: 5, redeem_48h_above_threshold: true },
      description: 'A basket of liquid restaking tokens on Base.',
      docs_url: 'https://docs.example.com/vaults/base-weth-lrt',
      strategy_brief: 'Equal-risk weighting across LRTs; 10% idle WETH buffer.',
      icons: true,
    },
    positions: [
      { platform: 'morpho', asset: 'Lido Wrapped Staked ETH', symbol: 'wstETH', weight: 40, apy: 3.3 },
      { platform: 'aave', asset: 'Coinbase Wrapped Staked ETH', symbol: 'cbETH', weight: 30, apy: 2.9 },
      { platform: 'moonwell', asset: 'Renzo Restaked ETH', symbol: 'ezETH', weight: 20, apy: 3.8 },
      weth('idle', 10, 0),
    ],
  },
]

/** The demo wallets (lowercase addresses), independent of everything else in the dataset. */
export function demoWallets(seed = DEMO_SEED, count = DEMO_WALLET_COUNT): string[] {
  const rng = mulberry32(seed ^ 0x5eed_a11e)
  return Array.from({ length: count }, () => `0x${hex(rng, 40)}`)
}

const PCT_UNITS = 1_000_000 // 100% in steps of 0.0001

/** Rounds weights to 4 decimals (largest remainder) so the rounded values sum to exactly 100. */
function roundToHundred(weights: number[]): number[] {
  const total = weights.reduce((a, b) => a + b, 0)
  const exact = weights.map((w) => (w / total) * PCT_UNITS)
  const units = exact.map(Math.floor)
  let missing = PCT_UNITS - units.reduce((a, b) => a + b, 0)
  const order = exact.map((e, i) => ({ i, r: e - Math.floor(e) })).sort((a, b) => b.r - a.r || a.i - b.i)
  for (let k = 0; missing > 0; k = (k + 1) % order.length, missing--) units[order[k]!.i]! += 1
  return units.map((u) => u / 10_000)
}

const smoothstep = (x: number) => (x <= 0 ? 0 : x >= 1 ? 1 : x * x * (3 - 2 * x))

function compositions(rng: Rng, plan: VaultPlan, start: number, end: number, now: number): ImportComposition[] {
  const waves = plan.positions.map(() => ({
    a: 0.15 + rng() * 0.25,
    p1: (40 + rng() * 80) * DAY,
    f1: rng() * 2 * Math.PI,
    b: 0.05 + rng() * 0.1,
    p2: (7 + rng() * 10) * DAY,
    f2: rng() * 2 * Math.PI,
    apyP: (20 + rng() * 40) * DAY,
    apyF: rng() * 2 * Math.PI,
  }))
  // Every 6 h over the vault's life, hourly over its last week so the 7d series has detail.
  const times = new Set<number>()
  for (let t = end - (end % (6 * HOUR)); t >= start; t -= 6 * HOUR) times.add(t)
  for (let t = end - (end % HOUR); t >= Math.max(start, end - 7 * DAY); t -= HOUR) times.add(t)
  return [...times]
    .sort((a, b) => a - b)
    .map((t) => {
      const held: { plan: PositionPlan; weight: number; apy: number }[] = []
      plan.positions.forEach((p, k) => {
        const w = waves[k]!
        const daysAgo = (now - t) / DAY
        const ramp =
          (p.enterDaysAgo === undefined ? 1 : smoothstep((p.enterDaysAgo - daysAgo) / 5)) *
          (p.exitDaysAgo === undefined ? 1 : smoothstep((daysAgo - p.exitDaysAgo) / 5))
        const weight = p.weight * ramp * Math.exp(w.a * Math.sin((2 * Math.PI * t) / w.p1 + w.f1) + w.b * Math.sin((2 * Math.PI * t) / w.p2 + w.f2))
        if (weight < 0.05) return
        const apy = p.apy === 0 ? 0 : Math.max(0, p.apy * (1 + 0.2 * Math.sin((2 * Math.PI * t) / w.apyP + w.apyF)) + (rng() - 0.5) * 0.1)
        held.push({ plan: p, weight, apy: Math.round(apy * 100) / 100 })
      })
      const pcts = roundToHundred(held.map((h) => h.weight))
      const positions: ImportPosition[] = held.map((h, i) => ({
        platform: h.plan.platform,
        asset: h.plan.asset,
        symbol: h.plan.symbol,
        pct: pcts[i]!,
        apy_est_pct: h.apy,
        icon: `https://assets.example.com/tokens/${h.plan.symbol.toLowerCase().replace(/[^a-z0-9-]/g, '-')}.svg`,
      }))
      return { vault_id: plan.id, as_of: iso(t), positions: positions.filter((p) => p.pct > 0) }
    })
}

// ---------------------------------------------------------------------------------------------
// Vault snapshots (docs/spec/decisions.md §9): two years of hourly share price, TVL and USD price
// per vault, so the performance history and its APY windows have data at once. Computed in
// integers (BigInt) on a per-vault random stream of its own, so 17,520 points a vault cost
// milliseconds and the rest of the dataset is independent of them.

/** The history shown for every vault: two years back from `now`. */
export const DEMO_HISTORY_DAYS = 730
const PRICE_SCALE = 10n ** 18n
const RATE_SCALE = 1_000_000_000_000n // hourly rates in parts per 10^12

/** `units` / 10^decimals as a canonical amount string (formatAmount's: no trailing zeros, "0" for zero). */
function unitsToAmount(units: bigint, decimals: number): string {
  if (units === 0n) return '0'
  const negative = units < 0n
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, '0')
  const whole = digits.slice(0, digits.length - decimals)
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '')
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`
}

const amountToUnits = (amount: string, decimals: number) => BigInt(new Decimal(amount).times(new Decimal(10).pow(decimals)).toFixed(0, Decimal.ROUND_DOWN))

/** A vault's hourly share-price path (10^18 units) from `from` to `to` (hour-aligned, inclusive). */
interface PricePath {
  from: number
  prices: bigint[]
  /** The price at time `t` (the hour it falls in), clamped to the path. */
  at(t: number): Decimal
}

/**
 * The share price, hour by hour: a net yield around the vault's `yieldPct` that wanders (a slow
 * wave and hourly noise), starting at 1. The BTC carry vault has a drawdown that leaves it below
 * where it started: the demo's vault that lost money.
 */
function pricePath(seed: number, plan: VaultPlan, from: number, to: number): PricePath {
  const rng = mulberry32(seed ^ hashId(plan.id))
  const hours = Math.round((to - from) / HOUR) + 1
  const prices: bigint[] = new Array(hours)
  const phase = rng() * 2 * Math.PI
  const hourly = (plan.yieldPct / 100 / 8760) * 1e12
  const drawdown = plan.id === 'hyper-wbtc-carry' ? { start: hours - 200 * 24, end: hours - 188 * 24 } : undefined
  let p = PRICE_SCALE
  for (let h = 0; h < hours; h++) {
    prices[h] = p
    let rate = Math.round(hourly * (1 + 0.3 * Math.sin(h / 24 / 9 + phase) + (rng() - 0.5) * 0.8))
    // About −9% over twelve days: more than the two years of yield.
    if (drawdown && h >= drawdown.start && h < drawdown.end) rate = -Math.round((0.09 / 288) * 1e12 * (0.5 + rng()))
    p = (p * (RATE_SCALE + BigInt(rate))) / RATE_SCALE
  }
  return {
    from,
    prices,
    at: (t) => new Decimal(unitsToAmount(prices[Math.max(0, Math.min(hours - 1, Math.floor((t - from) / HOUR)))]!, 18)),
  }
}

/** A small stable hash of an id, to seed each vault's own stream. */
function hashId(id: string): number {
  let h = 2166136261
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619)
  return h >>> 0
}

/**
 * The spike the demo shows (decisions §9's flag): one hourly point of this vault 60 % above its
 * neighbours, at 23:00 UTC ten days before `now`: the last snapshot of its day and of its 6-hour
 * block, so the 30d and 1y series (points = each bucket's last snapshot) show it flagged.
 */
export const DEMO_SPIKE = { vaultId: 'base-usdc-flex', daysAgo: 10, factorPct: 160 }

/** When the demo's spike is, for a dataset made at `now`. */
export function demoSpikeTime(now: Date | number): Date {
  const t = typeof now === 'number' ? now : now.getTime()
  return new Date(Math.floor((t - DEMO_SPIKE.daysAgo * DAY) / DAY) * DAY + 23 * HOUR)
}

/**
 * Hourly snapshots over the path: TVL grows toward the live value (a closed vault's drains to 0
 * before it closes), the USD price of volatile base assets walks to the live price; the last
 * snapshot IS the vault's live values (decisions §9), so importing the vault record adds none.
 */
function vaultSnapshots(seed: number, plan: VaultPlan, path: PricePath, liveTvl: string, now: number): ImportVaultSnapshot[] {
  const rng = mulberry32((seed ^ hashId(plan.id)) + 1)
  const n = path.prices.length
  const tvlUnits = amountToUnits(liveTvl, plan.decimals)
  // A closed vault is empty now; it held this much before it drained.
  const sizeUnits = tvlUnits > 0n ? tvlUnits : amountToUnits('4200000', plan.decimals)
  const stable = new Decimal(plan.priceUsd).lt(2)
  const usdCents = amountToUnits(plan.priceUsd, 4)
  // The USD price: a random walk (about 3 % a day) that ends at the live price.
  const walk: number[] = new Array(n)
  let w = 0
  for (let h = 0; h < n; h++) {
    walk[h] = w
    if (!stable) w += (rng() - 0.5) * 0.012
  }
  const wEnd = walk[n - 1]!
  const wave = rng() * 2 * Math.PI
  const spikeAt = plan.id === DEMO_SPIKE.vaultId ? Math.round((demoSpikeTime(now).getTime() - path.from) / HOUR) : -1
  const out: ImportVaultSnapshot[] = new Array(n)
  for (let h = 0; h < n; h++) {
    const x = h / (n - 1)
    // Deposits grow the vault from a sixth of its size; a closed vault drains over its last 30 days.
    const drain = plan.status === 'closed' ? Math.min(1, (n - 1 - h) / (30 * 24)) : 1
    const growth = h === n - 1 ? 1 : (0.16 + 0.84 * x ** 1.3) * (1 + 0.04 * Math.sin(x * 40 + wave)) * drain
    const tvl = h === n - 1 ? tvlUnits : (sizeUnits * BigInt(Math.round(growth * 1e6))) / 1_000_000n
    let price = path.prices[h]!
    if (h === spikeAt) price = (price * BigInt(DEMO_SPIKE.factorPct)) / 100n
    out[h] = {
      vault_id: plan.id,
      as_of: iso(path.from + h * HOUR),
      share_price: unitsToAmount(price, 18),
      tvl: unitsToAmount(tvl, plan.decimals),
      base_asset_price_usd: stable ? plan.priceUsd : unitsToAmount((usdCents * BigInt(Math.round(Math.exp(walk[h]! - wEnd) * 1e9))) / 1_000_000_000n, 4),
    }
  }
  return out
}

/** A random amount of the base asset: log-uniform in whole units, then random sub-unit digits. */
function randomAmount(rng: Rng, [lo, hi]: [number, number], decimals: number, scale = 1): Decimal {
  const micros = Math.floor(logUniform(rng, lo * scale, hi * scale) * 1e6)
  let value = new Decimal(micros).div(1e6)
  if (decimals > 6) {
    // The digits past the sixth: below 10^(decimals − 6) units of 10^−decimals, so below 0.000001.
    // (Twelve random digits on an 8-decimal asset once added up to 9,999 WBTC per deposit.)
    const tail = new Decimal(int(rng, 0, 999_999) * 1e6 + int(rng, 0, 999_999)).mod(new Decimal(10).pow(Math.min(12, decimals - 6)))
    value = value.plus(tail.div(new Decimal(10).pow(decimals)))
  }
  return value.toDecimalPlaces(decimals, Decimal.ROUND_DOWN)
}

interface PairPlan {
  wallet: string
  plan: VaultPlan
  events: number
  scale: number
  /** Scripted trailing events for the showcase wallet, in ms before `now`. */
  tail?: { type: TransactionType; agoMs: number; status?: TransactionStatus; fraction?: number }[]
}

function transactionsFor(rng: Rng, pair: PairPlan, path: PricePath, start: number, now: number, out: Omit<ImportTransaction, 'id'>[]): Decimal {
  const { plan } = pair
  const stoppedAt = plan.stoppedDaysAgo === undefined ? now : now - plan.stoppedDaysAgo * DAY
  // Scripted tail events come last in time too, so balances are spent in timestamp order.
  const tailFrom = pair.tail ? now - Math.max(...pair.tail.map((e) => e.agoMs)) - HOUR : now
  const activeUntil = plan.status === 'closed' ? stoppedAt - DAY : tailFrom
  // Early adopters outnumber late ones, and nobody trades more than about twice a day on average.
  const first = start + rng() ** 1.5 * Math.max(DAY, activeUntil - start - 2 * DAY)
  const events = Math.min(pair.events, Math.max(1, Math.round((2 * (activeUntil - first)) / DAY)))
  const times = Array.from({ length: events }, (_, i) => (i === 0 ? first : first + rng() * (activeUntil - first))).sort((a, b) => a - b)
  let balance = new Decimal(0) // shares neither spent nor pending out
  const price = path.at

  const emit = (type: TransactionType, t: number, forced?: TransactionStatus, fraction?: number) => {
    t = Math.floor(t)
    const p = price(t)
    let amount: Decimal
    let shares: Decimal
    if (type === 'deposit') {
      amount = randomAmount(rng, plan.depositRange, plan.decimals, pair.scale)
      shares = amount.div(p).toDecimalPlaces(18, Decimal.ROUND_DOWN)
    } else {
      const pct = fraction ?? (chance(rng, 0.3) ? 100 : int(rng, 5, 90))
      shares = balance.times(pct).div(100).toDecimalPlaces(18, Decimal.ROUND_DOWN)
      amount = shares.times(p).toDecimalPlaces(plan.decimals, Decimal.ROUND_DOWN)
      if (shares.isZero()) return
    }
    const settleMs = type === 'redeem' ? int(rng, plan.redeemDelayHours[0] * HOUR, plan.redeemDelayHours[1] * HOUR) : int(rng, 12_000, 240_000)
    const roll = rng()
    let status: TransactionStatus = forced ?? (roll < 0.03 ? 'failed' : roll < 0.06 ? 'cancelled' : t + settleMs > now ? 'pending' : 'completed')
    if (status === 'completed' && t + settleMs > now) status = 'pending'
    // A pending out-flow has already left the balance (docs/spec/decisions.md §6); a pending deposit has not arrived.
    if (type === 'deposit' && status === 'completed') balance = balance.plus(shares)
    else if (type !== 'deposit' && (status === 'completed' || status === 'pending')) balance = balance.minus(shares)
    out.push({
      vault_id: plan.id,
      address: pair.wallet,
      type,
      status,
      amount: formatAmount(amount),
      shares: formatAmount(shares),
      timestamp: iso(t),
      completed_at: status === 'completed' ? iso(t + settleMs) : null,
      tx_hash: `0x${hex(rng, 64)}`,
    })
  }

  for (const [i, t] of times.entries()) {
    const depositsOpen = t < stoppedAt
    if (i === 0 || (balance.isZero() && depositsOpen)) {
      if (depositsOpen) emit('deposit', t)
      continue
    }
    const roll = rng()
    if (roll < 0.5 && depositsOpen) emit('deposit', t)
    else if (!balance.isZero()) emit(roll < 0.72 ? 'withdraw' : 'redeem', t)
  }
  // A closed vault was emptied: everyone redeemed before it closed.
  if (plan.status === 'closed' && balance.gt(0)) emit('redeem', stoppedAt - int(rng, 2, 20) * HOUR, 'completed', 100)
  for (const e of pair.tail ?? []) emit(e.type, now - e.agoMs - int(rng, 0, 20_000), e.status, e.fraction)
  return balance
}

/**
 * The demo document: ~8 vaults on several chains in every status, two years of hourly vault
 * snapshots (share price, TVL, USD price), a year of 6-hourly composition snapshots, and ~25k
 * transactions from 400 wallets. Deterministic in (seed, now).
 */
export function generateDemoDataset(options: { seed?: number; now?: Date } = {}): ImportDocument {
  const seed = options.seed ?? DEMO_SEED
  const now = Math.floor((options.now ?? DEMO_NOW).getTime() / HOUR) * HOUR // hour-aligned, so snapshot grids are stable
  const rng = mulberry32(seed)
  const wallets = demoWallets(seed)
  const popularity = PLANS.reduce((a, p) => a + p.popularity, 0)
  const pickVault = () => {
    let r = rng() * popularity
    for (const p of PLANS) if ((r -= p.popularity) < 0) return p
    return PLANS[PLANS.length - 1]!
  }

  const starts = new Map(PLANS.map((p) => [p.id, Math.floor((now - p.ageDays * DAY) / DAY) * DAY]))
  const ends = new Map(PLANS.map((p) => [p.id, p.status === 'closed' ? now - p.stoppedDaysAgo! * DAY : now]))
  // The share-price history of each vault: two years back, to its last day (a closed vault's close).
  const historyFrom = now - DEMO_HISTORY_DAYS * DAY
  const paths = new Map(PLANS.map((p) => [p.id, pricePath(seed, p, historyFrom, ends.get(p.id)!)]))

  const pairs: PairPlan[] = []
  wallets.forEach((wallet, w) => {
    if (w === 0) {
      // The showcase wallet: long histories, and pending redeems in two vaults.
      const plan = (id: string) => PLANS.find((p) => p.id === id)!
      pairs.push(
        {
          wallet,
          plan: plan('usdc-prime'),
          events: 140,
          scale: 4,
          tail: [
            { type: 'deposit', agoMs: 3 * DAY, status: 'completed' },
            { type: 'redeem', agoMs: 5 * HOUR, status: 'pending', fraction: 20 },
          ],
        },
        {
          wallet,
          plan: plan('weth-staking-plus'),
          events: 40,
          scale: 2,
          tail: [
            { type: 'deposit', agoMs: 10 * DAY, status: 'completed' },
            { type: 'redeem', agoMs: 20 * HOUR, status: 'pending', fraction: 35 },
          ],
        },
        {
          wallet,
          plan: plan('arb-usdc-core'),
          events: 25,
          scale: 1,
          tail: [
            { type: 'deposit', agoMs: 2 * DAY, status: 'completed' },
            { type: 'deposit', agoMs: 90_000, status: 'pending' },
            { type: 'withdraw', agoMs: 60_000, status: 'pending', fraction: 10 },
          ],
        },
        { wallet, plan: plan('dai-savings-legacy'), events: 12, scale: 1 },
      )
      return
    }
    const vaultCount = 1 + Number(chance(rng, 0.55)) + Number(chance(rng, 0.3)) + Number(chance(rng, 0.1))
    const chosen = new Set<VaultPlan>()
    while (chosen.size < vaultCount) chosen.add(pickVault())
    const activity = logUniform(rng, 2, 160)
    const scale = chance(rng, 0.05) ? 10 : 1
    for (const plan of chosen) pairs.push({ wallet, plan, events: Math.max(1, Math.round(activity * (0.5 + rng()))), scale })
  })

  const drafts: Omit<ImportTransaction, 'id'>[] = []
  const held = new Map<string, Decimal>(PLANS.map((p) => [p.id, new Decimal(0)]))
  for (const pair of pairs) {
    const balance = transactionsFor(rng, pair, paths.get(pair.plan.id)!, starts.get(pair.plan.id)!, now, drafts)
    held.set(pair.plan.id, held.get(pair.plan.id)!.plus(balance))
  }
  // Ids follow time order, so they read like an exchange's sequence numbers.
  const transactions = drafts
    .map((d, i) => ({ d, i }))
    .sort((a, b) => (a.d.timestamp < b.d.timestamp ? -1 : a.d.timestamp > b.d.timestamp ? 1 : a.i - b.i))
    .map(({ d }, i): ImportTransaction => ({ id: `tx_${String(i + 1).padStart(6, '0')}`, ...d }))

  // Built as wire input and made canonical by the import schema: an optional field added to it
  // (docs/development.md "Evolving the schema") needs nothing here, and a misspelt key does not compile.
  const vaults = PLANS.map((p) => {
    const price = paths.get(p.id)!.at(ends.get(p.id)!)
    // The demo wallets are a slice of each vault's depositors.
    const tvl =
      p.status === 'closed'
        ? new Decimal(0)
        : held
            .get(p.id)!
            .times(price)
            .times(int(rng, 4, 12))
            .toDecimalPlaces(p.decimals, Decimal.ROUND_DOWN)
    return vaultRecord({
      id: p.id,
      name: p.name,
      chain: p.chain,
      chain_id: p.chainId,
      symbol: p.symbol,
      base_asset: p.baseAsset,
      base_asset_price_usd: p.priceUsd,
      status: p.status,
      tvl: formatAmount(tvl),
      share_price: formatAmount(price),
      perf_fee_bps: p.perfFeeBps,
      mgmt_fee_bps: p.mgmtFeeBps,
      contract: { address: `0x${hex(rng, 40)}` },
      deposit_constraints: p.extra.deposit_constraints,
      withdraw_constraints: p.extra.withdraw_constraints,
      icons: p.extra.icons
        ? { dark: `https://assets.example.com/vaults/${p.id}-dark.svg`, light: `https://assets.example.com/vaults/${p.id}-light.svg` }
        : { dark: null, light: null },
      api_endpoint: `https://vaults.example.com/api/v1/vaults/${p.id}`,
      description: p.extra.description,
      docs_url: p.extra.docs_url,
      // The history starts here; the demo wallets joined later (at the vault's ageDays).
      inception_date: iso(historyFrom).slice(0, 10),
      strategy_brief: p.extra.strategy_brief,
    })
  })

  return {
    vaults,
    compositions: PLANS.flatMap((p) => compositions(rng, p, starts.get(p.id)!, ends.get(p.id)!, now)),
    vault_snapshots: vaults.flatMap((v, i) => vaultSnapshots(seed, PLANS[i]!, paths.get(v.id)!, v.tvl, now)),
    transactions,
  }
}

export interface DemoHints {
  vaultIds: string[]
  wallets: { address: string; vaultId: string; note: string }[]
  /** The first of those vaults with a chain id: the contract a by-address lookup finds (absent when none has one). */
  contract?: { vaultId: string; chainId: string; address: string }
}
