import { createHash } from 'node:crypto'
import type { ImportTransaction, ImportVault } from '../../src/importer/document.js'

// Building blocks for hand-made wallet datasets (the decisions.md §7 import document).

/** A contract address of its own for each vault id (deterministic). */
export const contractOf = (id: string) => `0x${createHash('sha256').update(id).digest('hex').slice(0, 40)}`

export function vaultDoc(id: string, overrides: Partial<ImportVault> = {}): ImportVault {
  return {
    id,
    name: `Vault ${id}`,
    chain: 'ethereum',
    chain_id: '1',
    symbol: 'vUSDC',
    base_asset: 'USDC',
    base_asset_price_usd: '1',
    status: 'active',
    tvl: '1000000',
    share_price: '1',
    perf_fee_bps: 1000,
    mgmt_fee_bps: null,
    // One contract per vault: (chain_id, contract address) is unique (decisions §14).
    contract: { address: contractOf(id) },
    deposit_constraints: { max_deposit: null, min_deposit: null, paused: null },
    withdraw_constraints: { instant_liquidity: null, instant_slippage_max_bps: null, redeem_24h_threshold_pct_of_aum: null, redeem_48h_above_threshold: null },
    icons: { dark: null, light: null },
    api_endpoint: `https://api.vaultgate.test/v1/vaults/${id}`,
    description: null,
    docs_url: null,
    inception_date: null,
    strategy_brief: null,
    ...overrides,
  }
}

/** A transaction row of the import document; `tx_hash` derives from the id unless given. */
export function txDoc(
  id: string,
  fields: Omit<ImportTransaction, 'id' | 'tx_hash' | 'completed_at' | 'shares'> & Partial<ImportTransaction>,
): ImportTransaction {
  const completed_at = fields.status === 'completed' ? fields.timestamp : null
  return { id, tx_hash: `0x${Buffer.from(id).toString('hex').padStart(64, '0').slice(-64)}`, completed_at, shares: fields.amount, ...fields }
}
