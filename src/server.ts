import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import type { App } from './app.js'
import type { Config } from './config.js'
import { openDatabase, type Database } from './db/client.js'
import type { DemoHints } from './demo/dataset.js'
import { demoHintsFromDatabase, seedDemoIfEmpty } from './demo/seed.js'
import { lockDataDir, type DataDirLock } from './db/embedded-lock.js'
import { isUnavailableError } from './core/errors.js'
import { exampleIdsFromHints } from './graphql/examples.js'
import { logger } from './core/log.js'
import { silentProgress, type Progress } from './core/progress.js'
import { upsertAllowlist } from './keys/allowlist.js'

/** A failure to boot, with one sentence for the operator (no stack trace). */
export class BootError extends Error {
  override name = 'BootError'
}

export interface RunningGateway {
  url: string
  app: App
  db: Database
  /** Demo vault ids and wallets to try, when demo data is on (read after the gateway is ready). */
  hints?: Promise<DemoHints>
  close(): Promise<void>
}

function describeStorage(config: Config): string {
  if (config.storage.mode === 'embedded') return `embedded PGlite in ${config.storage.dataDir}`
  const u = new URL(config.storage.url)
  return `PostgreSQL at ${u.hostname}:${u.port || 5432}${u.pathname}`
}

/** The driver's own sentence, without Prisma's multi-line invocation preamble. */
function driverMessage(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e)
  const quoted = /Message: `([^`]+)`/.exec(text)?.[1]
  const line =
    quoted ??
    text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .pop() ??
    'unknown error'
  return `${line.replace(/\.$/, '')}.`
}

/** Opens (and locks, in embedded mode) the database and applies pending migrations. */
export async function prepareDatabase(config: Config): Promise<{ db: Database; lock?: DataDirLock; applied: string[] }> {
  const embeddedDir = config.storage.mode === 'embedded' && !config.storage.dataDir.startsWith('memory://') ? config.storage.dataDir : undefined
  const lock = embeddedDir ? await lockDataDir(embeddedDir) : undefined
  let db: Database | undefined
  try {
    db = await openDatabase(config)
    await db.ping()
    const applied = await db.migrate()
    return { db, lock, applied }
  } catch (e) {
    await db?.close().catch(() => {})
    await lock?.release()
    if (isUnavailableError(e)) throw new BootError(`Cannot reach the database (${describeStorage(config)}): ${driverMessage(e)}`)
    throw e
  }
}

/** `progress`: where to show the long steps of a first start (migrations, demo data). */
export async function startGateway(config: Config, { progress = silentProgress }: { progress?: Progress } = {}): Promise<RunningGateway> {
  const started = performance.now()
  // The HTTP and GraphQL modules load while the database opens (file reads and PGlite's
  // WebAssembly compilation overlap): they are most of the time of a start that has nothing to migrate.
  const appModule = import('./app.js')
  appModule.catch(() => {}) // a failure to open the database is the error to report
  progress.update('Opening the database and applying migrations')
  const { db, lock, applied } = await prepareDatabase(config)
  progress.end() // before any log line: both may share the terminal
  let app: App | undefined
  try {
    if (applied.length > 0) logger.info({ applied }, 'migrations applied')
    await upsertAllowlist(config.allowlist)
    let hints: Promise<DemoHints> | undefined
    if (config.seedDemo) {
      progress.update('Checking for demo data')
      const seeded = await seedDemoIfEmpty(undefined, { onProgress: (label, done, total) => progress.update(label, done, total) })
      progress.end()
      if (seeded.seeded) logger.info({ counts: seeded.counts }, 'demo data loaded')
      // On a later start they are read back with two scans of the transactions: after the
      // gateway is ready, not before (only the banner and GraphiQL's examples wait for them).
      hints = seeded.hints ? Promise.resolve(seeded.hints) : demoHintsFromDatabase()
      hints.catch(() => {})
    }
    const { createApp } = await appModule
    app = createApp({ config, db, examples: hints?.then(exampleIdsFromHints, () => undefined) })
    await app.ready
    const server = createAdaptorServer({ fetch: app.fetch, hostname: config.host, port: config.port }) as Server
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(e.code === 'EADDRINUSE' ? new BootError(`Port ${config.port} on ${config.host} is already in use; set PORT to another port.`) : e),
      )
      server.listen(config.port, config.host, () => resolve())
    })
    const { port } = server.address() as AddressInfo
    const host = config.host.includes(':') ? `[${config.host}]` : config.host
    const url = `http://${host === '0.0.0.0' || host === '[::]' ? 'localhost' : host}:${port}`
    await lock?.setUrl(url)
    logger.info({ url, storage: db.mode, ms: Math.round(performance.now() - started) }, `vaultgate ready at ${url}/graphql`)

    let closing: Promise<void> | undefined
    const close = () =>
      (closing ??= (async () => {
        // Stop accepting, let in-flight requests finish, then cut idle keep-alive sockets.
        const done = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeIdleConnections()
        const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs)
        await done
        clearTimeout(timer)
        await app?.close()
        await db.close()
        await lock?.release()
      })())
    return { url, app, db, hints, close }
  } catch (e) {
    await app?.close().catch(() => {})
    await db.close().catch(() => {})
    await lock?.release()
    throw e
  }
}
