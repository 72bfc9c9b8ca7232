import type { PrismaClient } from '../generated/prisma/client.js'
import { readLocalMigrations } from './migrate.js'

export interface MigrationStatus {
  /** Checked-in migrations the database records as finished, in order. */
  applied: string[]
  /** Checked-in migrations not applied yet, in order: what `vaultgate migrate` would apply. */
  pending: string[]
  /** Started and never finished (a migration that failed): `vaultgate migrate` refuses until it is resolved. */
  failed: string[]
  /** Finished migrations this version does not have (a newer version migrated the database). */
  unknown: string[]
}

/** Reads `_prisma_migrations` (absent on an empty database) against the checked-in migrations; writes nothing. */
export async function migrationStatus(prisma: PrismaClient): Promise<MigrationStatus> {
  const local = (await readLocalMigrations()).map((m) => m.name)
  const [table] = await prisma.$queryRaw<{ present: boolean }[]>`SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present`
  const rows = table?.present
    ? await prisma.$queryRaw<{ name: string; finished: boolean; rolledBack: boolean }[]>`
        SELECT migration_name AS name, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS "rolledBack"
        FROM _prisma_migrations ORDER BY migration_name`
    : []
  const finished = new Set(rows.filter((r) => r.finished && !r.rolledBack).map((r) => r.name))
  const known = new Set(local)
  return {
    applied: local.filter((name) => finished.has(name)),
    pending: local.filter((name) => !finished.has(name)),
    failed: rows.filter((r) => !r.finished && !r.rolledBack && !finished.has(r.name)).map((r) => r.name),
    unknown: [...finished].filter((name) => !known.has(name)),
  }
}
