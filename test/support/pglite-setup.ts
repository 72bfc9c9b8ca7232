import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { openDatabase } from '../../src/db/client.js'

// Creating a PGlite database (initdb) takes seconds; loading a dump of an already migrated one takes
// a few hundred milliseconds. Migrate once per run and let every test file start from the dump.
export default async function setup(project: TestProject) {
  const dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-pglite-'))
  const file = path.join(dir, 'migrated.tar')
  const db = await openDatabase({
    storage: { mode: 'embedded', dataDir: 'memory://' },
    pool: { max: 1, connectTimeoutMs: 1000, idleTimeoutMs: 1000, statementTimeoutMs: 0 },
  })
  await db.migrate()
  const dump = await db.pglite!.dumpDataDir('none')
  await writeFile(file, Buffer.from(await dump.arrayBuffer()))
  await db.close()
  project.provide('pgliteSnapshot', file)
  // And on disk, for the gateway processes the CLI tests spawn: copying a migrated data directory
  // takes milliseconds where a fresh one costs an initdb and the migrations (7-10 s) per process.
  const template = path.join(dir, 'data-dir')
  const onDisk = await openDatabase({
    storage: { mode: 'embedded', dataDir: template },
    pool: { max: 1, connectTimeoutMs: 1000, idleTimeoutMs: 1000, statementTimeoutMs: 0 },
  })
  await onDisk.migrate()
  await onDisk.close()
  project.provide('pgliteDataDir', template)
  return () => rm(dir, { recursive: true, force: true })
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteSnapshot: string
    /** A migrated, empty embedded data directory to copy (see test/support/process.ts embeddedDataDir). */
    pgliteDataDir: string
  }
}
