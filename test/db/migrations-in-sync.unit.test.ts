import { PGlite } from '@electric-sql/pglite'
import { PrismaPGlite } from 'pglite-prisma-adapter'
import { describe, expect, it } from 'vitest'
import { diffMigrationsToSchema } from '../../src/db/migrate.js'

describe('checked-in migrations', () => {
  // A schema change without its migration would boot fine in tests built from the schema, and
  // fail in production: Prisma's engine diffs the migrations (on a shadow database) against the schema.
  it('are in step with prisma/schema.prisma', async () => {
    expect(await diffMigrationsToSchema(new PrismaPGlite(new PGlite('memory://')))).toBe('')
  })
})
