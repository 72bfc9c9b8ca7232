import { sqlObservers, type SqlEvent } from '../../src/db/client.js'

/**
 * The freshness read (src/freshness/store.ts): once per process after each import, whichever
 * request comes first (or a NOTIFY arriving late on PostgreSQL), not per request. Left out of the
 * per-request counts below; test/freshness/freshness.test.ts counts it on its own.
 */
export const isFreshnessRead = (sql: string) => sql.includes('FROM data_state')

/** Records every SQL statement the Prisma client sends while `work` runs (but the freshness read: `all` to keep it). */
export async function recordSql<T>(work: () => Promise<T>, { all = false } = {}): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = []
  const observer = (e: SqlEvent) => {
    if (all || !isFreshnessRead(e.sql)) statements.push(e.sql)
  }
  sqlObservers.add(observer)
  try {
    const result = await work()
    return { result, statements }
  } finally {
    sqlObservers.delete(observer)
  }
}
