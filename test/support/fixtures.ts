import type { Db } from '../../src/db/client.js'

/** A vault row with every required column; override what a test cares about. */
export function vaultRow(id: string, overrides: Record<string, unknown> = {}) {
  return {
    id,
    name: `Vault ${id}`,
    chain: 'ethereum',
    symbol: 'vUSDC',
    baseAsset: 'USDC',
    baseAssetPriceUsd: '1',
    status: 'active' as const,
    tvl: '1000',
    sharePrice: '1.05',
    perfFeeBps: 1000,
    contractAddress: '0x00000000000000000000000000000000000000aa',
    apiEndpoint: `https://api.vaultgate.test/v1/vaults/${id}`,
    ...overrides,
  }
}

export async function insertVault(db: Db, id: string, overrides: Record<string, unknown> = {}) {
  return db.vault.create({ data: vaultRow(id, overrides) as Parameters<typeof db.vault.create>[0]['data'] })
}
