import { createServer, maxHeaderSize, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { AddressInfo } from 'node:net'
import type { App } from './app.js'
import type { Config } from './config.js'
import { openDatabase, type Database } from './db/client.js'
import type { DemoHints } from './demo/dataset.js'
import { demoHintsFromDatabase, seedDemoIfEmpty } from './demo/seed.js'
import { migrationStatus } from './db/migration-status.js'
import { lockDataDir, type DataDirLock } from './db/embedded-lock.js'
import { errorBody, isUnavailableError } from './core/errors.js'
import { exampleIdsFromHints } from './graphql/examples.js'
import { isGraphqlWebSocket } from './http/pipeline/websocket.js'
import { logger } from './core/log.js'
import { silentProgress, type Progress } from './core/progress.js'
import { upsertAllowlist } from './keys/allowlist.js'
import { loadSourcesFile, SourcesConfigError, type SourcesConfig } from './sources/config.js'

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
  /**
   * Stops the gateway. With `delayMs`, first /readyz answers 503 and everything else is still served
   * for that long (load balancers stop sending new requests), then it stops accepting and drains.
   */
  close(options?: { delayMs?: number }): Promise<void>
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

/** The one sentence for a database that cannot be reached. */
export function unreachableDatabase(config: Config, e: unknown): BootError {
  return new BootError(`Cannot reach the database (${describeStorage(config)}): ${driverMessage(e)}`)
}

/**
 * Opens (and locks, in embedded mode) the database and applies pending migrations; with
 * `migrate: false` it applies none and returns the names of those pending instead.
 */
export async function prepareDatabase(
  config: Config,
  { migrate = true }: { migrate?: boolean } = {},
): Promise<{ db: Database; lock?: DataDirLock; applied: string[]; pending: string[] }> {
  const embeddedDir = config.storage.mode === 'embedded' && !config.storage.dataDir.startsWith('memory://') ? config.storage.dataDir : undefined
  // Its refreshes stalled past staleness and another process took the directory over: stop at
  // once, before both write to it.
  const onLost = (e: Error) => {
    logger.fatal({ err: e, dataDir: embeddedDir }, 'lost the lock on the data directory to another process; exiting')
    process.exit(1)
  }
  const lock = embeddedDir ? await lockDataDir(embeddedDir, { onLost }) : undefined
  let db: Database | undefined
  try {
    db = await openDatabase(config)
    await db.ping()
    if (!migrate) return { db, lock, applied: [], pending: (await migrationStatus(db.prisma)).pending }
    const applied = await db.migrate()
    return { db, lock, applied, pending: [] }
  } catch (e) {
    await db?.close().catch(() => {})
    await lock?.release()
    if (isUnavailableError(e)) throw unreachableDatabase(config, e)
    throw e
  }
}

/** VAULT_SOURCES_FILE, validated; a problem is a BootError listing each one with its JSON path. */
async function readSources(file: string): Promise<SourcesConfig> {
  try {
    return await loadSourcesFile(file)
  } catch (e) {
    if (e instanceof SourcesConfigError) throw new BootError(e.message)
    throw e
  }
}

/**
 * The HTTP server around the app. Requests Node refuses before the app sees them (a header block
 * over Node's limit, a malformed request line) get the standard error body and
 * `Connection: close`, not Node's bare status line.
 */
export function createHttpServer(app: Pick<App, 'listener' | 'upgrade'>): Server {
  // Every request through the one pipeline (docs/adr/0005-one-pipeline.md), written from node:http.
  // Upgrades: only a graphql-transport-ws one on /graphql becomes a WebSocket (the transport of
  // subscriptions on that endpoint: src/http/pipeline/websocket.ts); any other goes through the
  // pipeline as the request it also is (Node ≥ 22.21 and 24.9: shouldUpgradeCallback; before, the
  // 'upgrade' handler refuses it).
  const options = { shouldUpgradeCallback: isGraphqlWebSocket } as ServerOptions // not yet in @types/node 22
  const server = createServer(options, app.listener)
  server.on('upgrade', app.upgrade)
  // The answer in progress on each socket (Node's own is a private field): a parse error after
  // its head was sent cannot be answered on that connection.
  const answering = new WeakMap<object, ServerResponse>()
  server.prependListener('request', (req, res) => answering.set(req.socket, res))
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable || answering.get(socket)?.headersSent) {
      socket.destroy()
      return
    }
    const [status, reason, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', `The request headers are larger than ${maxHeaderSize} bytes.`]
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'The request was not received in time.']
          : [400, 'Bad Request', 'The request is not valid HTTP.']
    const body = JSON.stringify(errorBody('bad_request', message))
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    )
  })
  return server
}

/** `progress`: where to show the long steps of a first start (migrations, demo data). */
export async function startGateway(config: Config, { progress = silentProgress }: { progress?: Progress } = {}): Promise<RunningGateway> {
  const started = performance.now()
  // The sources file is checked before anything is opened or written.
  const chainSources = config.sourcesFile ? await readSources(config.sourcesFile) : undefined
  // The HTTP and GraphQL modules load while the database opens (file reads and PGlite's
  // WebAssembly compilation overlap): they are most of the time of a start that has nothing to migrate.
  const appModule = import('./app.js')
  appModule.catch(() => {}) // a failure to open the database is the error to report
  progress.update(config.migrateOnStart ? 'Opening the database and applying migrations' : 'Opening the database')
  const { db, lock, applied, pending } = await prepareDatabase(config, { migrate: config.migrateOnStart })
  progress.end() // before any log line: both may share the terminal
  let app: App | undefined
  try {
    if (pending.length > 0) {
      throw new BootError(
        `The database has ${pending.length} pending migration(s) (${pending.join(', ')}) and MIGRATE_ON_START is false; run \`vaultgate migrate\` first.`,
      )
    }
    if (applied.length > 0) logger.info({ applied }, 'migrations applied')
    await upsertAllowlist(db.prisma, config.allowlist)
    let hints: Promise<DemoHints> | undefined
    if (config.seedDemo) {
      progress.update('Checking for demo data')
      const seeded = await seedDemoIfEmpty(db.prisma, { onProgress: (label, done, total) => progress.update(label, done, total) })
      progress.end()
      if (seeded.seeded) logger.info({ counts: seeded.counts }, 'demo data loaded')
      // On a later start they are read back with two scans of the transactions: after the
      // gateway is ready, not before (only the banner and GraphiQL's examples wait for them).
      hints = seeded.hints ? Promise.resolve(seeded.hints) : demoHintsFromDatabase(db.prisma)
      hints.catch(() => {})
    }
    const { createApp } = await appModule
    app = createApp({ config, db, examples: hints?.then(exampleIdsFromHints, () => undefined), chainSources })
    await app.ready
    const server = createHttpServer(app)
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
    const close = ({ delayMs = 0 }: { delayMs?: number } = {}) =>
      (closing ??= (async () => {
        // From here every answer carries Connection: close (src/http/pipeline/finish.ts).
        app?.drain()
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
        // Subscription streams end with `event: complete` (their clients reconnect elsewhere): they
        // would otherwise hold the server open until SHUTDOWN_TIMEOUT_MS.
        app?.subscriptions.close()
        // Stop accepting, let in-flight requests finish, then cut idle keep-alive sockets.
        const done = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeIdleConnections()
        // A WebSocket is no longer an HTTP connection: one whose peer never answered the close is cut too.
        const timer = setTimeout(() => {
          server.closeAllConnections()
          app?.subscriptions.terminate()
        }, config.shutdownTimeoutMs)
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
