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
