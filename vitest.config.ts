import { defineConfig } from 'vitest/config'

// Every suite runs against embedded PGlite. When TEST_DATABASE_URL points at a PostgreSQL server
// (CI sets it), the same suites run a second time against PostgreSQL, each file in a fresh database.
// `*.unit.test.ts` files touch no database and run once.
const postgres = process.env.TEST_DATABASE_URL
const common = { include: ['test/**/*.test.ts'], testTimeout: 60_000, hookTimeout: 120_000 }

export default defineConfig({
  test: {
    projects: [
      { test: { ...common, name: 'pglite', env: { VAULTGATE_TEST_DB: 'pglite' }, globalSetup: ['test/support/pglite-setup.ts'] } },
      ...(postgres
        ? [
            {
              test: {
                ...common,
                exclude: ['test/**/*.unit.test.ts'],
                name: 'postgres',
                env: { VAULTGATE_TEST_DB: 'postgres' },
                globalSetup: ['test/support/postgres-setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
})
