import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createHttpServer } from '../../src/server.js'
import type { App } from '../../src/app.js'

/** `app` behind a real HTTP server on a free port; its base URL and how to stop it. */
export async function listen(app: App): Promise<{ base: string; server: Server; stop(): Promise<void> }> {
  const server = createHttpServer(app)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    stop: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** An import document's vault record with every required field. */
export const liveVault = (id: string, fields: Record<string, unknown> = {}) => ({
  id,
  name: `Vault ${id}`,
  chain: 'ethereum',
  chain_id: null,
  symbol: 'vUSDC',
  base_asset: 'USDC',
  base_asset_price_usd: '1',
  status: 'active',
  tvl: '1000',
  share_price: '1',
  perf_fee_bps: 0,
  contract: { address: '0x2222222222222222222222222222222222222222' },
  deposit_constraints: {},
  withdraw_constraints: {},
  icons: {},
  api_endpoint: `https://x.example/api/${id}`,
  ...fields,
})

/** An import document's transaction (a completed deposit of 100 unless `fields` say otherwise; test/importer uses it too). */
export const liveTransaction = (id: string, vaultId: string, address: string, fields: Record<string, unknown> = {}) => ({
  id,
  vault_id: vaultId,
  address,
  type: 'deposit',
  status: 'completed',
  amount: '100',
  shares: '99.5',
  timestamp: '2026-11-20T10:00:00.000Z',
  completed_at: '2026-11-20T10:00:30.000Z',
  tx_hash: `0x${Buffer.from(id).toString('hex').padStart(64, '0')}`,
  ...fields,
})
