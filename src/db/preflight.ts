import pg from 'pg'

export type DatabaseCheck = { ok: true } | { ok: false; problem: string } | { ok: false; unreachable: unknown }

/**
 * Connects once to DATABASE_URL before anything is written. A database that does not exist, or
 * credentials the server refuses, are configuration problems (reported with the others, one line
 * each); a server that cannot be reached is not, and is returned for the caller to report.
 */
export async function checkDatabase(url: string, connectTimeoutMs: number): Promise<DatabaseCheck> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs, application_name: 'vaultgate' })
  client.on('error', () => {})
  try {
    await client.connect()
    return { ok: true }
  } catch (e) {
    const { code, message } = e as { code?: string; message?: string }
    const u = new URL(url)
    const where = `PostgreSQL at ${u.hostname}:${u.port || 5432}`
    const database = decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || 'postgres'
    // 3D000 invalid_catalog_name; 28P01 invalid_password; 28000 invalid_authorization_specification (unknown role, no pg_hba entry).
    if (code === '3D000')
      return { ok: false, problem: `DATABASE_URL: the database "${database}" does not exist on ${where}; create it (createdb ${database}) or fix the URL` }
    if (code === '28P01' || code === '28000') return { ok: false, problem: `DATABASE_URL: ${where} refused the connection: ${message ?? code}` }
    return { ok: false, unreachable: e }
  } finally {
    await client.end().catch(() => {})
  }
}
