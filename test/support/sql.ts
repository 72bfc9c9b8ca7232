import { sqlObservers, type SqlEvent } from '../../src/db/client.js'

/** Records every SQL statement the Prisma client sends while `work` runs. */
export async function recordSql<T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = []
  const observer = (e: SqlEvent) => statements.push(e.sql)
  sqlObservers.add(observer)
  try {
    const result = await work()
    return { result, statements }
  } finally {
    sqlObservers.delete(observer)
  }
}
