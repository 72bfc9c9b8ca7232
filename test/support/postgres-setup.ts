import pg from 'pg'
import type { TestProject } from 'vitest/node'
import { openDatabase } from '../../src/db/client.js'

// Migrates one template database per run; each test file clones it (CREATE DATABASE … TEMPLATE),
// which is much faster than migrating per file and keeps files isolated from each other.
export default async function setup(project: TestProject) {
  const url = new URL(process.env.TEST_DATABASE_URL!)
  const template = `vaultgate_tpl_${process.pid}`
  const admin = new pg.Client({ connectionString: url.toString() })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${template}`)
  await admin.query(`CREATE DATABASE ${template}`)
  const tplUrl = new URL(url)
  tplUrl.pathname = `/${template}`
  const db = await openDatabase({
    storage: { mode: 'postgres', url: tplUrl.toString() },
    pool: { max: 2, connectTimeoutMs: 5000, idleTimeoutMs: 1000, statementTimeoutMs: 0 },
  })
  await db.migrate()
  await db.close()
  project.provide('pgTemplate', template)
  return async () => {
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'vaultgate_t_${process.pid}_%'`)
    for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`)
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`)
    await admin.end()
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgTemplate: string
  }
}
