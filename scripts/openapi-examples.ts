// Writes src/openapi/examples.json: the answers /docs shows, taken from a gateway serving the demo
// data (in memory, the dataset's fixed seed and date), so Swagger UI shows real vault ids, amounts
// and cursors instead of the "string" and 2147483647 it makes up from the schemas. Lists are cut to
// two items. Re-run after a change to the wire shapes or the demo data:
//
//   npx tsx scripts/openapi-examples.ts && npx biome format --write src/openapi/examples.json
//
// test/openapi/examples.test.ts checks every example against its operation's schema and that the
// ids and wallets in them are the demo data's.
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { packageRoot } from '../src/core/paths.js'
import { openDatabase } from '../src/db/client.js'
import { DEMO_NOW } from '../src/demo/dataset.js'
import { seedDemoIfEmpty } from '../src/demo/seed.js'

const config = loadConfig({ NODE_ENV: 'test', DATA_DIR: 'memory://openapi-examples', LOG_LEVEL: 'silent', RESPONSE_CACHE_TTL_MS: '0', WEBHOOK_WORKER: 'false' })
const db = await openDatabase(config)
await db.migrate()
const seeded = await seedDemoIfEmpty(db.prisma, { now: DEMO_NOW })
const hints = seeded.hints!
const vaultId = hints.vaultIds[0]!
const holder = hints.wallets.find((w) => w.note.startsWith('open position'))!
const pending = hints.wallets.find((w) => w.note.startsWith('pending redeems'))!
const app = createApp({ config, db, clock: () => DEMO_NOW })
await app.ready

/** Lists cut to two items, the server time fixed: small, stable examples. */
function trim(value: unknown): unknown {
  if (Array.isArray(value)) return value.slice(0, 2).map(trim)
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === 'server_time_ms' ? DEMO_NOW.getTime() : trim(v)]))
  return value
}

const get = async (url: string) => {
  const res = await app.fetch(new Request(`http://vaultgate.test${url}`))
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`)
  return trim(await res.json())
}

const responses: Record<string, unknown> = {
  'GET /v1/vaults': await get('/v1/vaults?limit=2'),
  'GET /v1/vaults/{vault_id}': await get(`/v1/vaults/${vaultId}`),
  'GET /v1/vaults/{vault_id}/composition': await get(`/v1/vaults/${vaultId}/composition`),
  'GET /v1/vaults/{vault_id}/composition/series': await get(`/v1/vaults/${vaultId}/composition/series?timeframe=30d`),
  'GET /v1/users/{address}/vaults/{vault_id}/transactions': await get(`/v1/users/${holder.address}/vaults/${holder.vaultId}/transactions?limit=2`),
  'GET /v1/users/{address}/redeems': await get(`/v1/users/${pending.address}/redeems`),
  'GET /v1/users/{address}/vaults/{vault_id}/summary': await get(`/v1/users/${holder.address}/vaults/${holder.vaultId}/summary`),
  'GET /v1/users/{address}/transactions': await get(`/v1/users/${holder.address}/transactions?limit=2`),
  'GET /v1/users/{address}/positions': await get(`/v1/users/${holder.address}/positions`),
}

const examples = {
  // Path parameters: a demo vault, and a demo wallet with an open position in it.
  params: { vault_id: holder.vaultId, address: holder.address },
  responses,
}
await writeFile(path.join(packageRoot, 'src', 'openapi', 'examples.json'), `${JSON.stringify(examples, null, 2)}\n`)
await app.close()
await db.close()
console.info(`src/openapi/examples.json: ${Object.keys(responses).length} answers, vault ${holder.vaultId}, wallet ${holder.address}`)
