import type { ImportVault, ImportVaultSnapshot } from '../../src/importer/document.js'
import { EXPLORER_NOW, fullVault } from './explorer-data.js'

// Share-price and TVL history for the explorer's vault (decisions §9), for the browser test:
// hourly snapshots over the 40 days before EXPLORER_NOW, the newest one carrying the vault's live
// values (1.0425, 1,250,000.5), the price rising 0.000005 an hour, and one spike 67 hours back
// (the price × 1.6 for one hour, flagged by the 50 % rule and left out of the APY windows). Its
// hour (17:00) is the last of a 6-hour bucket, so the 7d and 30d series both show it.
// 40 days: the 1d, 7d, 30d and inception windows have an APY, 90d and 1y do not (null, never 0).

const HOUR = 3_600_000
export const HISTORY_HOURS = 40 * 24
export const SPIKE_HOURS_AGO = 67

/** A decimal string for `units` × 10^-scale, without trailing zeros (the wire's notation). */
const decimal = (units: bigint, scale: number) => {
  const text = units.toString().padStart(scale + 1, '0')
  const [int, frac] = [text.slice(0, -scale), text.slice(-scale).replace(/0+$/, '')]
  return frac ? `${int}.${frac}` : int
}

export const alphaHistory: ImportVaultSnapshot[] = Array.from({ length: HISTORY_HOURS + 1 }, (_, i) => {
  const hoursAgo = HISTORY_HOURS - i
  const price = 10_425_000n - BigInt(hoursAgo) * 5n // × 10^-7: 1.0425 now, 1.04058 forty days ago
  const tvl = 12_500_005n - BigInt(hoursAgo) * 1_000n // × 10^-1: 1,250,000.5 now
  return {
    vault_id: fullVault.id,
    as_of: new Date(EXPLORER_NOW.getTime() - hoursAgo * HOUR - 30 * 60_000).toISOString(),
    share_price: decimal(hoursAgo === SPIKE_HOURS_AGO ? (price * 16n) / 10n : price, 7),
    tvl: decimal(tvl, 1),
    base_asset_price_usd: '1',
  }
})

/**
 * A third vault for the list's order: less TVL than alpha-usdc (500,000 DAI) but a higher 7-day APY
 * (its price rises 0.00002 an hour), and only 8 days of history (no 30-day APY).
 */
export const gammaVault: ImportVault = {
  ...fullVault,
  id: 'gamma-dai',
  name: 'Gamma DAI',
  symbol: 'vgDAI',
  base_asset: 'DAI',
  base_asset_price_usd: '1',
  tvl: '500000',
  share_price: '1.00384',
  contract: { address: '0x3333333333333333333333333333333333333333' },
  api_endpoint: 'https://api.vaultgate.test/v1/vaults/gamma-dai',
}

export const gammaHistory: ImportVaultSnapshot[] = Array.from({ length: 8 * 24 + 1 }, (_, i) => {
  const hoursAgo = 8 * 24 - i
  return {
    vault_id: gammaVault.id,
    as_of: new Date(EXPLORER_NOW.getTime() - hoursAgo * HOUR - 30 * 60_000).toISOString(),
    share_price: decimal(100_384n - BigInt(hoursAgo) * 2n, 5), // 1.00384 now
    tvl: '500000',
    base_asset_price_usd: '1',
  }
})
