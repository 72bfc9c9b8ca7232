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

/**
 * After records were taken back (a chain reorg's rollback, src/sources/store.ts rollBack):
 * data_as_of becomes the newest time the remaining data holds — each vault's newest vault and
 * composition snapshot (one backward probe each on their keys) and the newest transaction time,
 * submitted or completed (a scan: no index orders transactions by time; a rollback is rare) — and
 * never later than it was, which keeps an import's clamp of rows dated after it. No data left: null.
 * Run inside the rollback's transaction, so no reader sees the records gone and the old time.
 */
export async function recomputeDataAsOf(tx: Pick<PrismaClient, '$executeRawUnsafe'>): Promise<void> {
  await tx.$executeRawUnsafe(`WITH newest AS (
      SELECT max(t) AS t FROM (
        SELECT (SELECT s.as_of FROM vault_snapshots s WHERE s.vault_id = v.id ORDER BY s.as_of DESC LIMIT 1) AS t FROM vaults v
        UNION ALL
        SELECT (SELECT c.as_of FROM composition_snapshots c WHERE c.vault_id = v.id ORDER BY c.as_of DESC LIMIT 1) FROM vaults v
        UNION ALL
        SELECT max(GREATEST(timestamp, completed_at)) FROM transactions
      ) held
    )
    UPDATE data_state SET data_as_of = CASE WHEN newest.t IS NULL THEN NULL ELSE LEAST(data_state.data_as_of, newest.t) END
    FROM newest WHERE data_state.id = 1`)
}
