import { execFile } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { appendFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { eventually } from './eventually.js'
import { freePort } from './ports.js'

// A PostgreSQL primary and a streaming standby of it, started from the machine's PostgreSQL
// binaries (initdb, then pg_basebackup -R) in a temporary directory on free ports, for the read
// replica suites (test/db/replicas.test.ts). Both log every statement with the client's
// application_name in front (`vaultgate|…`, `vaultgate-replica|…`), so a test sees which server
// each statement of the gateway reached.
//
// The benchmark starts the same pair (bench/replicas.ts, without the statement logs), so this file
// imports nothing of vitest's.
//
// The binaries are required in CI (the PostgreSQL server package is installed there): a missing
// one fails the importing file. Elsewhere, without CI set, a machine lacking them skips the suite.

const run = promisify(execFile)

function findBinaries(): string | undefined {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'pg_basebackup')))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? undefined : path.join(root, versions[0], 'bin')
}

export const PG_BINDIR = findBinaries()
export const hasPostgresBinaries = PG_BINDIR !== undefined
if (!hasPostgresBinaries && process.env.CI)
  throw new Error(
    'The PostgreSQL server binaries (initdb, pg_basebackup, pg_ctl) are required in CI and were not found under /usr/lib/postgresql/*/bin (or PG_BINDIR).',
  )

/** PostgreSQL refuses to run as root: as root, the servers run as the `postgres` OS user. */
const asRoot = process.getuid?.() === 0
async function pgTool(tool: string, args: string[]): Promise<string> {
  const bin = path.join(PG_BINDIR!, tool)
  const { stdout } = asRoot ? await run('runuser', ['-u', 'postgres', '--', bin, ...args]) : await run(bin, args)
  return stdout
}

export interface ReplicaPair {
  primaryUrl: string
  replicaUrl: string
  /** The replica's name in /readyz and metrics (host:port). */
  replicaName: string
  /** A statement on the primary (superuser), outside the gateway. */
  primary(sql: string, params?: unknown[]): Promise<pg.QueryResult>
  /** A statement on the replica (superuser), outside the gateway. */
  replica(sql: string, params?: unknown[]): Promise<pg.QueryResult>
  /** Until the replica has replayed everything the primary has written so far. */
  caughtUp(): Promise<void>
  /** Statements each server logged since `mark` (a mark is where its log ended), as `application_name|text`. */
  mark(): { primary: number; replica: number }
  since(mark: { primary: number; replica: number }): { primary: string[]; replica: string[] }
  stopReplica(): Promise<void>
  startReplica(): Promise<void>
  /** The postmasters' process ids (their backends are their children). */
  postmasterPids(): { primary: number; replica: number }
  close(): Promise<void>
}

const CONF = (port: number, dir: string, logStatements: boolean) => `
port = ${port}
listen_addresses = '127.0.0.1'
unix_socket_directories = '${dir}'
wal_level = replica
max_wal_senders = 4
hot_standby = on
fsync = off
full_page_writes = off
log_statement = '${logStatements ? 'all' : 'none'}'
log_line_prefix = '%a|'
log_min_messages = warning
`

/**
 * Starts the pair with an empty database `vaultgate` on both (replicated); `close()` stops both and
 * removes everything. `logStatements: false` (the benchmark) leaves `mark`/`since` empty.
 */
export async function startReplicaPair({ logStatements = true }: { logStatements?: boolean } = {}): Promise<ReplicaPair> {
  const dir = mkdtempSync(path.join(tmpdir(), 'vaultgate-replicas-'))
  if (asRoot) chownSync(dir, ...(await postgresIds()))
  const primaryDir = path.join(dir, 'primary')
  const replicaDir = path.join(dir, 'replica')
  const logs = { primary: path.join(dir, 'primary.log'), replica: path.join(dir, 'replica.log') }
  const [primaryPort, replicaPort] = [await freePort(), await freePort()]
  const started: string[] = []
  const clients: pg.Client[] = []
  const stop = async (data: string) => {
    await pgTool('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {})
  }
  const close = async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => {})))
    for (const data of started.reverse()) await stop(data)
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await pgTool('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
    await appendFile(path.join(primaryDir, 'postgresql.conf'), CONF(primaryPort, dir, logStatements))
    await pgTool('pg_ctl', ['-D', primaryDir, '-l', logs.primary, '-w', 'start'])
    started.push(primaryDir)
    const url = (port: number, db: string) => `postgresql://postgres@127.0.0.1:${port}/${db}`
    const admin = new pg.Client({ connectionString: url(primaryPort, 'postgres') })
    await admin.connect()
    await admin.query('CREATE DATABASE vaultgate')
    await admin.end()
    await pgTool('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      replicaDir,
      '-R',
      '-X',
      'stream',
      '--checkpoint=fast',
      '--no-sync',
    ])
    // The standby keeps the primary's settings file: only its port differs.
    await appendFile(path.join(replicaDir, 'postgresql.conf'), `\nport = ${replicaPort}\n`)
    const startReplica = async () => {
      await pgTool('pg_ctl', ['-D', replicaDir, '-l', logs.replica, '-w', 'start'])
    }
    await startReplica()
    started.push(replicaDir)

    const connect = async (port: number) => {
      const c = new pg.Client({ connectionString: url(port, 'vaultgate'), application_name: 'test' })
      c.on('error', () => {})
      await c.connect()
      return c
    }
    const primary = await connect(primaryPort)
    clients.push(primary)
    let replica: pg.Client | undefined
    const onReplica = async () => {
      if (!replica) {
        replica = await connect(replicaPort)
        clients.push(replica)
      }
      return replica
    }
    const size = (file: string) => (existsSync(file) ? readFileSync(file).length : 0)
    const entries = (file: string, from: number) =>
      readFileSync(file)
        .subarray(from)
        .toString('utf8')
        .split('\n')
        .filter((line) => /^[^|\s]*\|/.test(line))
    const pair: ReplicaPair = {
      primaryUrl: url(primaryPort, 'vaultgate'),
      replicaUrl: url(replicaPort, 'vaultgate'),
      replicaName: `127.0.0.1:${replicaPort}`,
      primary: (sql, params) => primary.query(sql, params),
      replica: async (sql, params) => {
        try {
          return await (await onReplica()).query(sql, params)
        } catch (e) {
          // A connection from before a stop is dead: the next call opens a new one.
          replica = undefined
          throw e
        }
      },
      caughtUp: async () => {
        const { rows } = await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
        await eventually(
          async () => {
            const r = await pair.replica('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [rows[0]!.lsn])
            return r.rows[0].done === true
          },
          { what: `the replica replayed ${rows[0]!.lsn}` },
        )
      },
      mark: () => ({ primary: size(logs.primary), replica: size(logs.replica) }),
      since: (m) => ({ primary: entries(logs.primary, m.primary), replica: entries(logs.replica, m.replica) }),
      stopReplica: async () => {
        replica = undefined
        await pgTool('pg_ctl', ['-D', replicaDir, '-m', 'fast', '-w', 'stop'])
      },
      startReplica,
      postmasterPids: () => {
        const pid = (data: string) => Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
        return { primary: pid(primaryDir), replica: pid(replicaDir) }
      },
      close,
    }
    await pair.caughtUp()
    return pair
  } catch (e) {
    await close()
    throw e
  }
}

async function postgresIds(): Promise<[number, number]> {
  const { stdout } = await run('id', ['postgres'])
  const uid = /uid=(\d+)/.exec(stdout)
  const gid = /gid=(\d+)/.exec(stdout)
  if (!uid || !gid) throw new Error(`no postgres OS user: ${stdout}`)
  return [Number(uid[1]), Number(gid[1])]
}
