import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createApp, type App } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { openDatabase, type Database } from '../../src/db/client.js'
import { importDocument } from '../../src/importer/write.js'
import { jwksOf, testKey, type TestKey } from './jwt.js'
import type { ReplicaPair } from './replica.js'
import { vaultDoc } from './wallet-data.js'

export interface ReplicaGateway {
  config: Config
  db: Database
  app: App
  /** Signs wallet sessions the gateway accepts (its JWKS file holds this key). */
  signer: TestKey
  /** In-process request through the pipeline. */
  request(path: string, init?: RequestInit): Promise<Response>
  close(): Promise<void>
}

/**
 * A gateway on a primary/standby pair (test/support/replica.ts), as the replica test files set it
 * up: migrated, vault `rep-a` at TVL 100, `wallet` on the allowlist, the standby caught up, admin
 * and internal tokens and a wallet-session key. `replicaUrl`: the standby's address as the gateway
 * sees it (a proxy's, to play faults); `env`: each file's own settings over the shared ones.
 */
export async function startReplicaGateway({
  pair,
  replicaUrl = pair.replicaUrl,
  wallet,
  tokens,
  env,
}: {
  pair: ReplicaPair
  replicaUrl?: string
  wallet: string
  tokens: { admin: string; internal: string }
  env: Record<string, string>
}): Promise<ReplicaGateway> {
  const dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-replica-keys-'))
  const signer = await testKey('ES256', 'k1')
  await writeFile(path.join(dir, 'jwks.json'), JSON.stringify(jwksOf(signer)))
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: pair.primaryUrl,
    DATABASE_REPLICA_URLS: replicaUrl,
    WEBHOOK_WORKER: 'false',
    API_KEY_USAGE_FLUSH_MS: '600000',
    ADMIN_TOKEN: tokens.admin,
    INTERNAL_TOKEN: tokens.internal,
    AUTH_JWKS_FILE: path.join(dir, 'jwks.json'),
    ...env,
  })
  const db = await openDatabase(config)
  await db.migrate()
  await importDocument({ vaults: [vaultDoc('rep-a', { tvl: '100' })] }, db.prisma)
  await db.prisma.allowlistEntry.create({ data: { address: wallet } })
  await pair.caughtUp()
  const app = createApp({ config, db })
  await app.ready
  return {
    config,
    db,
    app,
    signer,
    request: (p, init) => app.fetch(new Request(`http://vaultgate.test${p}`, init)),
    close: async () => {
      await app.close()
      await db.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
