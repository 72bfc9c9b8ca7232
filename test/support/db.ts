import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { inject } from 'vitest'
import type { Config } from '../../src/config.js'
import { openDatabase, type Database } from '../../src/db/client.js'

export const testBackend = (process.env.VAULTGATE_TEST_DB ?? 'pglite') as 'pglite' | 'postgres'

const pool: Config['pool'] = { max: 10, connectTimeoutMs: 5000, idleTimeoutMs: 1000, statementTimeoutMs: 30_000 }

/** Storage settings for a fresh, migrated, empty database of this project's backend. */
export async function freshStorage(): Promise<Config['storage']> {
  if (testBackend === 'postgres') {
    const base = new URL(process.env.TEST_DATABASE_URL!)
    const name = `vaultgate_t_${inject('pgTemplate').slice('vaultgate_tpl_'.length)}_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: base.toString() })
    await admin.connect()
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`)
    } finally {
      await admin.end()
    }
    base.pathname = `/${name}`
    return { mode: 'postgres', url: base.toString() }
  }
  return { mode: 'embedded', dataDir: 'memory://' }
}

/** A fresh, migrated, empty database; pass its `prisma` to whatever reads or writes (nothing finds it by itself). */
export async function testDatabase(): Promise<Database> {
  if (testBackend === 'pglite') {
    const snapshot = new Blob([await readFile(inject('pgliteSnapshot'))])
    const pglite = await PGlite.create({ loadDataDir: snapshot })
    return openDatabase({ storage: { mode: 'embedded', dataDir: 'memory://' }, pool }, { pglite })
  }
  const db = await openDatabase({ storage: await freshStorage(), pool })
  await db.migrate()
  return db
}

/** A fresh PostgreSQL database with nothing in it (not even the migrations). */
export async function emptyPostgres(): Promise<{ mode: 'postgres'; url: string }> {
  const storage = await freshStorage()
  if (storage.mode !== 'postgres') throw new Error('emptyPostgres() needs the postgres test backend')
  const client = new pg.Client({ connectionString: storage.url })
  await client.connect()
  await client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public')
  await client.end()
  return storage
}
