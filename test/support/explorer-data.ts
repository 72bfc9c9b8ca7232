import type { ImportComposition, ImportDocument, ImportPosition, ImportTransaction, ImportVault } from '../../src/importer/document.js'

// A small hand-built dataset with known answers, for the OpenAPI contract test and the browser
// test: one vault with every field set and a week of snapshots, one with every nullable field
// null and no snapshot. Requests run with the clock pinned at `EXPLORER_NOW`.

export const EXPLORER_NOW = new Date('2026-11-21T12:30:00.000Z')

const HOUR = 3_600_000

export const fullVault: ImportVault = {
  id: 'alpha-usdc',
  name: 'Alpha USDC',
  chain: 'ethereum',
  chain_id: '1',
  symbol: 'vgUSDC',
  base_asset: 'USDC',
  base_asset_price_usd: '1',
  status: 'active',
  tvl: '1250000.5',
  share_price: '1.0425',
  perf_fee_bps: 1000,
  mgmt_fee_bps: 50,
  contract: { address: '0x1111111111111111111111111111111111111111' },
  deposit_constraints: { max_deposit: '5000000', min_deposit: '10', paused: false },
  withdraw_constraints: { instant_liquidity: true, instant_slippage_max_bps: 30, redeem_24h_threshold_pct_of_aum: 10, redeem_48h_above_threshold: true },
  icons: { dark: 'https://icons.test/alpha-dark.svg', light: 'https://icons.test/alpha-light.svg' },
  api_endpoint: 'https://api.vaultgate.test/v1/vaults/alpha-usdc',
  description: 'USDC lent across blue-chip money markets.',
  docs_url: 'https://docs.vaultgate.test/alpha-usdc',
  inception_date: '2025-11-21',
  strategy_brief: 'Lend USDC on Aave and Morpho; hold some sDAI.',
}

export const bareVault: ImportVault = {
  ...fullVault,
  id: 'beta-eth',
  name: 'Beta ETH',
  chain: 'base',
  chain_id: null,
  symbol: 'vgETH',
  base_asset: 'WETH',
  base_asset_price_usd: '3000',
  status: 'paused',
  tvl: '0',
  share_price: '1',
  mgmt_fee_bps: null,
  contract: { address: '0x2222222222222222222222222222222222222222' },
  deposit_constraints: { max_deposit: null, min_deposit: null, paused: null },
  withdraw_constraints: { instant_liquidity: null, instant_slippage_max_bps: null, redeem_24h_threshold_pct_of_aum: null, redeem_48h_above_threshold: null },
  icons: { dark: null, light: null },
  api_endpoint: 'https://api.vaultgate.test/v1/vaults/beta-eth',
  description: null,
  docs_url: null,
  inception_date: null,
  strategy_brief: null,
}

const position = (platform: string, asset: string, symbol: string, pct: number, apy: number): ImportPosition => ({
  platform,
  asset,
  symbol,
  pct,
  apy_est_pct: apy,
  icon: `https://icons.test/${platform.toLowerCase()}-${symbol.toLowerCase()}.svg`,
})

const SNAPSHOTS = 45

/** Daily snapshots over the last 45 days: Aave shrinks from 50 to 30 %, Spark grows from 10 to 30 %, Morpho holds 40 %. */
export const alphaSnapshots: ImportComposition[] = Array.from({ length: SNAPSHOTS }, (_, i) => {
  const shift = Math.round((i * 20) / (SNAPSHOTS - 1))
  const aave = 50 - shift
  const spark = 10 + shift
  return {
    vault_id: fullVault.id,
    as_of: new Date(EXPLORER_NOW.getTime() - (SNAPSHOTS - 1 - i) * 24 * HOUR - 30 * 60_000).toISOString(),
    positions: [
      position('Aave', 'USD Coin', 'USDC', aave, 4.1),
      position('Morpho', 'USD Coin', 'USDC', 40, 5.2),
      position('Spark', 'Savings Dai', 'sDAI', spark, 6.5),
    ],
  }
})

/** Platforms of the newest snapshot by weight desc: the labels a series by platform shows. */
export const ALPHA_PLATFORMS = ['Morpho', 'Aave', 'Spark']
export const ALPHA_ASSETS = ['USD Coin', 'Savings Dai']

export const WALLET = '0x8ba1f109551bd432803012645ac136ddd64dba72'

const at = (hoursAgo: number) => new Date(EXPLORER_NOW.getTime() - hoursAgo * HOUR).toISOString()
const tx = (
  n: number,
  type: ImportTransaction['type'],
  status: ImportTransaction['status'],
  amount: string,
  shares: string,
  hoursAgo: number,
): ImportTransaction => ({
  id: `tx-${n}`,
  vault_id: fullVault.id,
  address: WALLET,
  type,
  status,
  amount,
  shares,
  timestamp: at(hoursAgo),
  completed_at: status === 'pending' ? null : at(hoursAgo - 1),
  tx_hash: `0x${String(n).padStart(64, '0')}`,
})

/** The wallet's history in alpha-usdc, oldest first: two deposits, a withdrawal, a pending redeem. */
export const walletTransactions: ImportTransaction[] = [
  tx(1, 'deposit', 'completed', '1000', '1000', 120),
  tx(2, 'deposit', 'completed', '500', '490', 72),
  tx(3, 'withdraw', 'completed', '210', '200', 30),
  tx(4, 'redeem', 'pending', '104.25', '100', 3),
]

export const explorerDocument: ImportDocument = {
  vaults: [fullVault, bareVault],
  compositions: alphaSnapshots,
  vault_snapshots: [],
  transactions: walletTransactions,
}
