import { defineConfig } from 'prisma/config'

// For the stock Prisma CLI, where its native engines can be fetched (never needed by the gateway,
// which migrates with the WebAssembly engine in-process and records `_prisma_migrations` exactly as
// Prisma does): `prisma migrate status|deploy` use DATABASE_URL, `prisma db seed` loads the demo
// data. `prisma generate` needs no database, so the URL is optional here (`env()` would throw).
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations', seed: 'tsx scripts/seed-demo.ts' },
  ...(process.env.DATABASE_URL ? { datasource: { url: process.env.DATABASE_URL } } : {}),
})
