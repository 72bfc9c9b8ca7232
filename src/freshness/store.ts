import type { PrismaClient } from '../generated/prisma/client.js'

// The freshness contract's one read (decisions §10): the row every import writes in its own
// transaction (src/importer/write.ts), with each vault's data time beside it (vaults.data_as_of,
// written in the same statement). One statement: a primary-key probe and a pass over the vaults.

export type FreshnessDb = Pick<PrismaClient, '$queryRawUnsafe'>

export interface DataTimes {
  /** The newest snapshot or transaction time the data holds; null before any. */
  dataAsOf: Date | null
  /** When the last import was written; null before the first. */
  lastImportAt: Date | null
  /** Each vault's newest snapshot or transaction time (vaults without data are absent). */
  vaults: ReadonlyMap<string, Date>
}

export async function readDataTimes(db: FreshnessDb): Promise<DataTimes> {
  // Times as epoch milliseconds: JSON has no timestamp type, and timestamptz(3) holds whole ones.
  const [row] = await db.$queryRawUnsafe<{ data_as_of: Date | null; last_import_at: Date | null; vaults: [string, number][] | null }[]>(
    `SELECT data_as_of, last_import_at,
      (SELECT json_agg(json_build_array(v.id, (extract(epoch FROM v.data_as_of) * 1000)::bigint)) FROM vaults v WHERE v.data_as_of IS NOT NULL) AS vaults
    FROM data_state WHERE id = 1`,
  )
  const vaults = new Map<string, Date>()
  for (const [id, ms] of row?.vaults ?? []) vaults.set(id, new Date(Number(ms)))
  return { dataAsOf: row?.data_as_of ?? null, lastImportAt: row?.last_import_at ?? null, vaults }
}

/**
 * After records were taken back (a chain reorg's rollback, src/sources/store.ts rollBack): each
 * vault's data time (vaults.data_as_of) becomes the newest time its remaining data holds — its
 * newest vault and composition snapshot (one backward probe each on their keys) and its newest
 * transaction time, submitted or completed (a scan of its transactions: no index orders them by
 * time; a rollback is rare) — and data_as_of the newest of those; neither ever later than it was,
 * which keeps an import's clamp of rows dated after it. No data left: null. Run inside the
 * rollback's transaction, so no reader sees the records gone and the old times.
 */
export async function recomputeDataAsOf(tx: Pick<PrismaClient, '$executeRawUnsafe'>): Promise<void> {
  await tx.$executeRawUnsafe(`WITH held AS (
      SELECT v.id, v.data_as_of AS was, GREATEST(
        (SELECT s.as_of FROM vault_snapshots s WHERE s.vault_id = v.id ORDER BY s.as_of DESC LIMIT 1),
        (SELECT c.as_of FROM composition_snapshots c WHERE c.vault_id = v.id ORDER BY c.as_of DESC LIMIT 1),
        (SELECT max(GREATEST(t.timestamp, t.completed_at)) FROM transactions t WHERE t.vault_id = v.id)
      ) AS t FROM vaults v
    ), vault_times AS (
      UPDATE vaults v SET data_as_of = CASE WHEN held.t IS NULL THEN NULL ELSE LEAST(held.was, held.t) END
      FROM held WHERE v.id = held.id AND v.data_as_of IS DISTINCT FROM (CASE WHEN held.t IS NULL THEN NULL ELSE LEAST(held.was, held.t) END)
    )
    UPDATE data_state SET data_as_of = CASE WHEN newest.t IS NULL THEN NULL ELSE LEAST(data_state.data_as_of, newest.t) END
    FROM (SELECT max(t) AS t FROM held) newest WHERE data_state.id = 1`)
}
