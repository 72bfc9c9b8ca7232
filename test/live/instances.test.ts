import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { listen, liveTransaction, liveVault } from '../support/live.js'
import { startGatewayProcess, type GatewayProcess } from '../support/process.js'
import { subscribe } from '../support/sse.js'
import { jwksOf, signSession, testKey, type TestKey } from '../support/jwt.js'

// Subscribers on one instance hear the commits made through another (PostgreSQL LISTEN/NOTIFY on
// each instance's one LISTEN connection): instance A runs here, instance B is a `vaultgate start`
// process on the same database, and the import goes through B's admin route.

const ADMIN = 'admin-token-for-live-instances-0123456789ab'
const CAROL = '0xca201000000000000000000000000000000000c3'
const ERIN = '0xe2100000000000000000000000000000000000e5'

describe.runIf(testBackend === 'postgres')('subscriptions across instances (postgres)', () => {
  let a: TestApp
  let base: string
  let stop: () => Promise<void>
  let b: GatewayProcess
  let dir: string
  let signer: TestKey
  beforeAll(async () => {
    // Both instances accept the same wallet sessions.
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-live-'))
    signer = await testKey('ES256', 'k1')
    const jwks = path.join(dir, 'jwks.json')
    await writeFile(jwks, JSON.stringify(jwksOf(signer)))
    a = await createTestApp({ AUTH_JWKS_FILE: jwks, ALLOWLIST: ERIN })
    ;({ base, stop } = await listen(a.app))
    await importDocument({ vaults: [liveVault('cross-a')] }, a.db.prisma)
    b = await startGatewayProcess({
      DATABASE_URL: a.db.pool!.options.connectionString!,
      ADMIN_TOKEN: ADMIN,
      SEED_DEMO: 'false',
      AUTH_JWKS_FILE: jwks,
      ALLOWLIST: ERIN,
    })
  })
  afterAll(async () => {
    await b?.stop()
    await stop()
    await a.close()
    await rm(dir, { recursive: true, force: true })
  })

  it("a subscriber on instance A sees an import made through instance B within 1 s (the vault's values and the wallet's transaction)", async () => {
    const vault = await subscribe(fetch, `${base}/graphql`, 'subscription { vaultUpdated(id: "cross-a") { id tvl } }')
    const wallet = await subscribe(fetch, `${base}/graphql`, `subscription { walletActivity(address: "${CAROL}") { id status } }`)
    try {
      expect([vault.status, wallet.status]).toEqual([200, 200])
      const res = await fetch(`${b.url}/admin/import`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ vaults: [liveVault('cross-a', { tvl: '777.7' })], transactions: [liveTransaction('cross-t1', 'cross-a', CAROL)] }),
      })
      expect(res.status).toBe(200)
      expect(await vault.next(1000)).toEqual({ event: 'next', data: { data: { vaultUpdated: { id: 'cross-a', tvl: '777.7' } } } })
      expect(await wallet.next(1000)).toEqual({ event: 'next', data: { data: { walletActivity: { id: 'cross-t1', status: 'completed' } } } })
    } finally {
      vault.close()
      wallet.close()
    }
  })

  it("a key created through instance B reaches the owner's apiKeyChanged subscriber on instance A within 1 s", async () => {
    const session = { authorization: `Bearer ${await signSession(signer, { wallets: [ERIN] })}` }
    const keys = await subscribe(fetch, `${base}/graphql`, 'subscription { apiKeyChanged { type keyId } }', {}, session)
    try {
      expect(keys.status).toBe(200)
      const res = await fetch(`${b.url}/v1/apiKey`, { method: 'POST', headers: { ...session, 'content-type': 'application/json' }, body: '{}' })
      expect(res.status).toBe(200)
      const created = (await res.json()) as { data: { id: string } }
      expect(await keys.next(1000)).toEqual({ event: 'next', data: { data: { apiKeyChanged: { type: 'created', keyId: created.data.id } } } })
    } finally {
      keys.close()
    }
  })
})
