import { execFileSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { generateDataset } from './dataset.js'
import { ROOT, startBaseline, startGateway, type Target } from './processes.js'
import { scenarios } from './scenarios.js'
import { markdownTable, measureSlices, pct, processTree, recordAnswers, type SliceResult, type SliceSettings } from './slices.js'

// Issue 29's replica figure (docs/performance.md "GraphQL clients and shared live work"): uncached
// read throughput of a gateway with one streaming replica (DATABASE_REPLICA_URLS) against the same
// gateway on the primary alone, with the physical and database limits, in alternating slices. The
// bench starts its own primary and standby (test/support/replica.ts: initdb, pg_basebackup -R, as
// the `postgres` OS user when run as root; torn down after), generates the bench dataset on the
// primary and waits for the standby to replay it. Each slice also reads the CPU time of every
// process of each PostgreSQL server from /proc: which server did the work. Run by
// `npm run bench -- --sections replicas` (bench/run.ts).

const UNLIMITED = { RATE_LIMIT_PUBLIC_PER_MINUTE: '10000000', RATE_LIMIT_VERIFY_PER_MINUTE: '10000000' }
const UNCACHED = { RESPONSE_CACHE_TTL_MS: '0', API_KEY_CACHE_TTL_MS: '0' }
/**
 * Uncached public and wallet reads, all of which a replica serves (docs/operations.md "Read
 * replicas"). Not the 1y series: at ~5 req/s on two shared cores, a slice holds too few of them.
 */
const SCENARIOS = ['get_vault', 'graphql_vault', 'tx_first']

export interface ReplicaRow {
  scenario: string
  title: string
  physical: SliceResult
  database: SliceResult
  primaryOnly: SliceResult
  withReplica: SliceResult
}

export interface ReplicasResult {
  rows: ReplicaRow[]
  generatedInMs: number
  replayWaitMs: number
  /** vaultgate_db_reads_total of the gateway with the replica, after the run. */
  readsByTarget: Record<string, number>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function replicas(ctx: { settings: SliceSettings; log: (line: string) => void }): Promise<ReplicasResult> {
  // Imported here: the helper refuses to load in CI without the PostgreSQL server binaries.
  const { startReplicaPair, hasPostgresBinaries } = await import('../test/support/replica.js')
  if (!hasPostgresBinaries) throw new Error('the replicas section needs the PostgreSQL server binaries (initdb, pg_basebackup; PG_BINDIR)')
  ctx.log('Replicas: a primary and a streaming standby of its own')
  const pair = await startReplicaPair({ logStatements: false })
  const targets: Target[] = []
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vaultgate-bench-replicas-'))
  try {
    execFileSync(process.execPath, [path.join(ROOT, 'bin/vaultgate.js'), 'migrate'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: pair.primaryUrl },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    ctx.log('  generating the dataset on the primary')
    const info = await generateDataset(pair.primaryUrl, ctx.log)
    // Done now rather than by autovacuum in the middle of a measurement (the inserts of millions of
    // rows trigger it), and the visibility map set on both servers alike.
    const vacuumStarted = performance.now()
    await pair.primary('VACUUM')
    ctx.log(`  VACUUM in ${((performance.now() - vacuumStarted) / 1000).toFixed(1)} s`)
    const lsn = (await pair.primary('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn as string
    const waitStarted = performance.now()
    for (;;) {
      const done = await pair.replica('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [lsn]).then(
        (r) => r.rows[0].done === true,
        () => false,
      )
      if (done) break
      if (performance.now() - waitStarted > 600_000) throw new Error(`the standby had not replayed ${lsn} after 10 min`)
      await sleep(500)
    }
    const replayWaitMs = performance.now() - waitStarted
    ctx.log(`  the standby replayed the dataset ${(replayWaitMs / 1000).toFixed(1)} s after it was written`)

    const one = await startGateway({ ...UNLIMITED, ...UNCACHED, DATABASE_URL: pair.primaryUrl })
    targets.push(one)
    const two = await startGateway({ ...UNLIMITED, ...UNCACHED, DATABASE_URL: pair.primaryUrl, DATABASE_REPLICA_URLS: pair.replicaUrl })
    targets.push(two)
    for (let waited = 0; ; waited += 200) {
      const ready = (await (await fetch(`${two.url}/readyz`)).json()) as { data: { replicas: { state: string }[] } }
      if (ready.data.replicas[0]?.state === 'up') break
      if (waited > 30_000) throw new Error(`the replica is not up for the gateway: ${JSON.stringify(ready.data.replicas)}`)
      await sleep(200)
    }
    // No deep cursor: the page-1,000 read is not measured here.
    const history = { address: info.whale, vaultId: info.vaultIds[0]!, deepCursor: '' }
    const list = scenarios({ vaultIds: info.vaultIds, history }).filter((s) => SCENARIOS.includes(s.id))
    const answers = path.join(dir, 'answers.json')
    await writeFile(answers, JSON.stringify((await Promise.all(list.map((s) => recordAnswers(one.url, s.requests, s.id)))).flat()))
    const physical = await startBaseline('physical-server.ts', [answers], {})
    targets.push(physical)
    const db = await startBaseline('db-server.ts', [], { DATABASE_URL: pair.primaryUrl })
    targets.push(db)
    const pids = pair.postmasterPids()
    const watch = { primary: () => processTree(pids.primary), replica: () => processTree(pids.replica) }

    const rows: ReplicaRow[] = []
    for (const s of list) {
      ctx.log(`  ${s.title}`)
      const [p, d, a, b] = await measureSlices(
        [
          { label: 'physical', url: physical.url, pid: physical.pid, requests: s.requests },
          { label: 'database (primary)', url: db.url, pid: db.pid, requests: s.requests },
          { label: 'gateway, primary only', url: one.url, pid: one.pid, requests: s.requests },
          { label: 'gateway, primary + 1 replica', url: two.url, pid: two.pid, requests: s.requests },
        ],
        ctx.settings,
        watch,
      )
      rows.push({ scenario: s.id, title: s.title, physical: p!, database: d!, primaryOnly: a!, withReplica: b! })
      ctx.log(`    primary only ${a!.rps.toFixed(0)} req/s, with the replica ${b!.rps.toFixed(0)} req/s (×${(b!.rps / a!.rps).toFixed(2)})`)
    }
    const metrics = await (await fetch(`${two.url}/metrics`)).text()
    const readsByTarget = Object.fromEntries([...metrics.matchAll(/^vaultgate_db_reads_total\{target="([^"]+)"\} (\S+)$/gm)].map((m) => [m[1]!, Number(m[2])]))
    return { rows, generatedInMs: info.generatedInMs, replayWaitMs, readsByTarget }
  } finally {
    for (const t of targets) await t.stop()
    await pair.close()
    await rm(dir, { recursive: true, force: true })
  }
}

export function formatReplicas(r: ReplicasResult): string {
  const line = (row: ReplicaRow, x: SliceResult, compare?: boolean) => {
    const pg = x.watchedUsPerRequest
    return [
      row.title,
      x.label,
      Math.round(x.rps),
      x.p50,
      x.p99,
      compare ? pct(x.rps / row.physical.rps) : '',
      compare ? pct(x.rps / row.database.rps) : '',
      compare ? `×${(x.rps / row.primaryOnly.rps).toFixed(2)}` : '',
      Math.round(x.cpuUsPerRequest),
      Math.round(pg.primary ?? 0),
      Math.round(pg.replica ?? 0),
      Math.round(x.cpuUsPerRequest + (pg.primary ?? 0) + (pg.replica ?? 0)),
    ]
  }
  return markdownTable(
    [
      'scenario',
      'target',
      'req/s',
      'p50 ms',
      'p99 ms',
      'of physical',
      'of database',
      'vs primary only',
      'CPU µs/req',
      'primary PG µs/req',
      'replica PG µs/req',
      'all µs/req',
    ],
    r.rows.flatMap((row) => [line(row, row.physical), line(row, row.database), line(row, row.primaryOnly, true), line(row, row.withReplica, true)]),
  )
}
