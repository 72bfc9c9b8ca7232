import type { PrismaClient } from '../generated/prisma/client.js'

// The freshness contract's one read (decisions §10): the row every import writes in its own
// transaction (src/importer/write.ts). One primary-key probe.

export type FreshnessDb = Pick<PrismaClient, '$queryRawUnsafe'>

export interface DataTimes {
  /** The newest snapshot or transaction time the data holds; null before any. */
  dataAsOf: Date | null
  /** When the last import was written; null before the first. */
  lastImportAt: Date | null
}

export async function readDataTimes(db: FreshnessDb): Promise<DataTimes> {
  const [row] = await db.$queryRawUnsafe<{ data_as_of: Date | null; last_import_at: Date | null }[]>(
    'SELECT data_as_of, last_import_at FROM data_state WHERE id = 1',
  )
  return { dataAsOf: row?.data_as_of ?? null, lastImportAt: row?.last_import_at ?? null }
}
