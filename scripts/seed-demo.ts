// `prisma db seed` (prisma.config.ts), or `npx tsx scripts/seed-demo.ts`: loads the demo dataset
// into the configured database (DATABASE_URL, else the embedded one in DATA_DIR) when it holds no
// vaults yet. The migrations must be applied first (`vaultgate migrate` or `prisma migrate deploy`).
import { loadConfig } from '../src/config.js'
import { seedDemoIfEmpty } from '../src/demo/seed.js'
import { prepareDatabase } from '../src/server.js'

const config = loadConfig()
const { db, lock, pending } = await prepareDatabase(config, { migrate: false })
try {
  if (pending.length > 0) throw new Error(`${pending.length} migration(s) pending; run \`vaultgate migrate\` first.`)
  const result = await seedDemoIfEmpty(db.prisma)
  const c = result.counts
  console.log(
    c
      ? `Seeded ${c.vaults} vault(s), ${c.compositions} composition snapshot(s), ${c.transactions} transaction(s).`
      : 'The database already holds vaults; nothing seeded.',
  )
} catch (e) {
  console.error(`seed: ${(e as Error).message}`)
  process.exitCode = 1
} finally {
  await db.close()
  await lock?.release()
}
