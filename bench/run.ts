import { execFileSync } from 'node:child_process'
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { isDeepStrictEqual, parseArgs } from 'node:util'
import { createDatabase, databaseUrl, dropDatabase, generateDataset, keptDataset, rawKeyOf, type DatasetInfo } from './dataset.js'
import { load, type LoadResult } from './load.js'
import { cpuMsOf, memoryOf, ROOT, sampleRss, sqlStatements, startBaseline, startGateway, type Gateway, type Target } from './processes.js'
import { formatTable, machine, type ModeResult, type Row } from './report.js'
import { formatImportUnderLoad, importUnderLoad, type ImportUnderLoad } from './import-under-load.js'
import { requestKey, scenarios, type BenchRequest, type Scenario } from './scenarios.js'
import { clientsThroughput, formatClients, formatIdle, idleSubscribers, type ClientsResult, type IdleResult } from './clients.js'
import { formatSharedLive, sharedLive, type SharedLiveRow } from './import-under-load.js'
import { formatReplicas, replicas, type ReplicasResult } from './replicas.js'

// `npm run bench`: the gateway against its two same-run baselines, on PostgreSQL with the large
// generated dataset and on the embedded default with the demo data. See docs/performance.md "Benchmark".

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    mode: { type: 'string' },
    /** Only the uncached phase (no second gateway with the response cache on). */
    uncached: { type: 'boolean', default: false },
    /** More uncached gateways with other settings ("COMPRESS_MIN_BYTES=0;RESPONSE_CACHE_STALE_MS=0"), measured in the same slices. */
    compare: { type: 'string' },
    /**
     * What to run, comma-separated: `main` (the scenario table), `import` (bench/import-under-load.ts),
     * and beside them, on PostgreSQL only: `clients` (a trusted document by id vs in full, a cached
     * GET by id vs a cached REST read), `subscribers` (1,000 idle WebSocket and SSE subscribers),
     * `live` (an import with 0, 1 and 200 subscribers of one vault), `replicas` (a primary and a
     * streaming standby of the bench's own). Default `main,import`.
     */
    sections: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
})
const SECTIONS = ['main', 'import', 'clients', 'subscribers', 'live', 'replicas']
if (flags.help) {
  process.stdout.write(`npm run bench -- [--quick] [--mode postgres,embedded] [--only id,…] [--uncached] [--compare "K=V …;…"] [--sections ${SECTIONS.join(',')}]
  --quick      3 s per target, keeps the generated database
  --sections   default main,import; clients, subscribers, live and replicas are issue 28/29's figures (PostgreSQL)
See docs/performance.md "Benchmark".
`)
  process.exit(0)
}
const sections = (flags.sections ?? 'main,import').split(',').filter(Boolean)
/** The sections after the main table that read the bench dataset: it is dropped after them, not before. */
const datasetLater = ['clients', 'subscribers', 'live'].some((s) => sections.includes(s))
for (const s of sections) if (!SECTIONS.includes(s)) throw new Error(`--sections: unknown section ${s} (${SECTIONS.join(', ')})`)
const quick = flags.quick!
const settings = {
  seconds: Number(process.env.BENCH_DURATION ?? (quick ? 3 : 6)),
  warmupSeconds: quick ? 1 : 2,
  /** Each target's time is cut into this many alternating slices. */
  rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 50),
  adminUrl: process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
  database: process.env.BENCH_DB_NAME ?? 'vaultgate_bench',
  /** Keep the generated database for the next run (always in --quick). */
  keepDb: quick || process.env.BENCH_KEEP_DB === '1',
  modes: (flags.mode ?? process.env.BENCH_MODES ?? 'postgres,embedded').split(','),
  only: flags.only,
  uncached: flags.uncached!,
  compare: (flags.compare ?? '')
    .split(';')
    .filter((set) => set.trim() !== '')
    .map((set) =>
      Object.fromEntries(
        set
          .trim()
          .split(/\s+/)
          .map((kv) => kv.split('=') as [string, string]),
      ),
    ),
}
const RESULTS = path.join(ROOT, 'bench/results')
const log = (line: string) => process.stderr.write(`${line}\n`)
const INTERNAL_TOKEN = 'bench-internal-token-0123456789-0123456789abcdef'
/** How many keys the key-verification scenario rotates over. */
const KEYS = 50

/** The cursor of page `page` of a transaction history, by following next_cursor from the first page. */
async function cursorOfPage(url: string, path: string, page: number): Promise<string> {
  let cursor: string | null = null
  for (let i = 1; i < page; i++) {
    const res = await fetch(`${url}${path}${cursor ? `?cursor=${cursor}` : ''}`)
    const body = (await res.json()) as { next_cursor: string | null }
    if (!body.next_cursor) throw new Error(`${path} has fewer than ${page} pages`)
    cursor = body.next_cursor
  }
  return cursor!
}

interface Recorded {
  key: string
  status: number
  contentType: string
  body: string
}

/** The gateway's answer to each request of each scenario: the physical limit serves these bytes. */
async function record(gateway: Gateway, list: Scenario[]): Promise<Recorded[]> {
  const out: Recorded[] = []
  for (const s of list) {
    for (const r of s.requests) {
      const res = await fetch(gateway.url + r.path, { method: r.method, body: r.body, headers: r.headers })
      const body = await res.text()
      if (res.status !== 200) throw new Error(`${s.id}: ${r.method} ${r.path} answered ${res.status}: ${body.slice(0, 300)}`)
      out.push({
        key: requestKey(r.method, r.path, r.body ?? ''),
        status: res.status,
        contentType: res.headers.get('content-type') ?? 'application/json',
        body,
      })
    }
  }
  return out
}

/** The database limit must answer what the gateway answers, or its speed means nothing: compare. */
async function checkDbBaseline(db: Target, list: Scenario[], recorded: Recorded[]) {
  const byKey = new Map(recorded.map((r) => [r.key, r]))
  for (const s of list) {
    if (s.noDbBaseline) continue
    const r = s.requests[0]!
    const res = await fetch(db.url + r.path, { method: r.method, body: r.body, headers: r.headers })
    // The server's clock, and what the verify answer measures on it (time left, the rate-limit window).
    const withoutClock = (v: any) => {
      if (!v || typeof v !== 'object' || !('server_time_ms' in v)) return v
      const data = v.data && typeof v.data === 'object' && 'expiresInMs' in v.data ? { ...v.data, expiresInMs: 0, rateLimit: null } : v.data
      return { ...v, server_time_ms: 0, ...(data === undefined ? {} : { data }) }
    }
    const mine = withoutClock(await res.json().catch(() => undefined))
    const theirs = withoutClock(JSON.parse(byKey.get(requestKey(r.method, r.path, r.body ?? ''))!.body))
    if (!isDeepStrictEqual(mine, theirs))
      log(`  warning: the database baseline of ${s.id} answers differently from the gateway (${JSON.stringify(mine).slice(0, 200)} …)`)
  }
}

interface Measured extends LoadResult {
  /** CPU time of the server process per request, in microseconds. */
  cpuUsPerRequest: number
  sqlPerRequest?: number
  rssMiB?: number
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * SQL statements per request, from the gateway's /metrics: counted over sequential requests once
 * the load has drained (under load, requests still in flight when a slice ends would be counted
 * without their responses).
 */
async function statementsPerRequest(url: string, requests: BenchRequest[]): Promise<number> {
  let before = await sqlStatements(url)
  for (let settled = false; !settled; ) {
    await new Promise((r) => setTimeout(r, 300))
    const now = await sqlStatements(url)
    settled = now === before
    before = now
  }
  const sample = requests.slice(0, 20)
  const send = async () => {
    for (const r of sample) await (await fetch(url + r.path, { method: r.method, body: r.body, headers: r.headers })).arrayBuffer()
  }
  // Twice: with caches on, the first pass refills what the TTL expired; the second is the steady state.
  await send()
  before = await sqlStatements(url)
  await send()
  return ((await sqlStatements(url)) - before) / sample.length
}

/**
 * Measures the targets of one scenario in alternating slices (physical, database, gateway,
 * physical, …) so that a neighbour's burst of CPU use on this shared machine lands on all of them
 * alike. Throughput is the total over the slices; p50/p99 are the medians of the slices'.
 */
async function measureScenario(targets: { target: Target; gateway?: boolean }[], requests: BenchRequest[]): Promise<Measured[]> {
  for (const t of targets) await load(t.target.url, requests, { seconds: settings.warmupSeconds, connections: settings.connections })
  const slices = targets.map(() => [] as (LoadResult & { seconds: number; cpuMs: number; rss: number })[])
  const sliceSeconds = settings.seconds / settings.rounds
  for (let round = 0; round < settings.rounds; round++) {
    for (const [i, t] of targets.entries()) {
      const cpuBefore = cpuMsOf(t.target.pid)
      const stopSampling = sampleRss(t.target.pid)
      const started = performance.now()
      const r = await load(t.target.url, requests, { seconds: sliceSeconds, connections: settings.connections })
      const seconds = (performance.now() - started) / 1000
      const cpuMs = cpuMsOf(t.target.pid) - cpuBefore
      const rss = stopSampling()
      slices[i]!.push({ ...r, seconds, cpuMs, rss })
    }
  }
  const gateway = targets.find((t) => t.gateway)
  const sqlPerRequest = gateway ? await statementsPerRequest(gateway.target.url, requests) : undefined
  return targets.map((t, i) => {
    const s = slices[i]!
    const requestsTotal = s.reduce((a, x) => a + x.requests, 0)
    return {
      requests: requestsTotal,
      rps: s.reduce((a, x) => a + x.rps * sliceSeconds, 0) / (sliceSeconds * s.length),
      p50: median(s.map((x) => x.p50)),
      p99: median(s.map((x) => x.p99)),
      failures: s.reduce((a, x) => a + x.failures, 0),
      cpuUsPerRequest: (s.reduce((a, x) => a + x.cpuMs, 0) * 1000) / Math.max(1, requestsTotal),
      ...(t.gateway ? { sqlPerRequest, rssMiB: Math.max(...s.map((x) => x.rss)) } : {}),
    }
  })
}

const row = (scenario: Scenario, target: Row['target'], r: Measured, extra: Partial<Row> = {}): Row => ({
  scenario: scenario.id,
  title: scenario.title,
  target,
  rps: r.rps,
  p50: r.p50,
  p99: r.p99,
  requests: r.requests,
  failures: r.failures,
  cpuUsPerRequest: r.cpuUsPerRequest,
  ...(r.sqlPerRequest === undefined ? {} : { sqlPerRequest: r.sqlPerRequest, rssMiB: r.rssMiB }),
  ...extra,
})

/** Runs every scenario against the three targets (and the gateway again with the response cache on). */
async function runMode(
  mode: ModeResult['mode'],
  gatewayEnv: Record<string, string>,
  dbEnv: Record<string, string>,
  build: (gatewayUrl: string) => Promise<Scenario[]>,
  dataset: ModeResult['dataset'],
): Promise<ModeResult> {
  const rows: Row[] = []
  // The rate limiter runs (its cost is part of every request) but never refuses the load generator.
  gatewayEnv = { INTERNAL_TOKEN, RATE_LIMIT_PUBLIC_PER_MINUTE: '10000000', RATE_LIMIT_VERIFY_PER_MINUTE: '10000000', ...gatewayEnv }
  // Phase 1: no response cache and no API-key cache: every request reaches the database.
  const gateway = await startGateway({ ...gatewayEnv, RESPONSE_CACHE_TTL_MS: '0', API_KEY_CACHE_TTL_MS: '0' })
  const targets: Target[] = [gateway]
  const others: { label: `gateway ${string}`; target: Target }[] = []
  for (const env of settings.compare) {
    const target = await startGateway({ ...gatewayEnv, RESPONSE_CACHE_TTL_MS: '0', API_KEY_CACHE_TTL_MS: '0', ...env })
    others.push({
      label: `gateway ${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
      target,
    })
    targets.push(target)
  }
  try {
    log(`  gateway ready in ${gateway.readyMs.toFixed(0)} ms (pid ${gateway.pid})`)
    const list = (await build(gateway.url)).filter((s) => !settings.only || settings.only.split(',').some((o) => s.id.includes(o)))
    const recorded = await record(gateway, list)
    await mkdir(RESULTS, { recursive: true })
    const answersFile = path.join(RESULTS, `answers-${mode}.json`)
    await writeFile(answersFile, JSON.stringify(recorded))
    const physical = await startBaseline('physical-server.ts', [answersFile], {})
    targets.push(physical)
    const db = await startBaseline('db-server.ts', [], dbEnv)
    targets.push(db)
    await checkDbBaseline(db, list, recorded)

    for (const s of list) {
      log(`  ${s.title}`)
      const [p, g, ...rest] = await measureScenario(
        [
          { target: physical },
          { target: gateway, gateway: true },
          ...(s.noDbBaseline ? [] : [{ target: db }]),
          ...(s.noDbBaseline ? [] : others.map((o) => ({ target: o.target, gateway: true }))),
        ],
        s.requests,
      )
      const d = s.noDbBaseline ? undefined : rest[0]
      rows.push(row(s, 'physical', p!))
      if (d) rows.push(row(s, 'database', d))
      rows.push(row(s, 'gateway', g!, { vsPhysical: g!.rps / p!.rps, vsDatabase: d && g!.rps / d.rps }))
      log(
        `    physical ${p!.rps.toFixed(0)} req/s, database ${d ? d.rps.toFixed(0) : '—'}, gateway ${g!.rps.toFixed(0)} (p99 ${g!.p99} ms, ${g!.cpuUsPerRequest.toFixed(0)} µs CPU/req, ${g!.sqlPerRequest!.toFixed(2)} SQL/req)`,
      )
      if (d) {
        for (const [i, o] of others.entries()) {
          const m = rest[i + 1]!
          rows.push(row(s, o.label, m, { vsPhysical: m.rps / p!.rps, vsDatabase: m.rps / d.rps }))
          log(`    ${o.label}: ${m.rps.toFixed(0)} req/s (p99 ${m.p99} ms, ${m.cpuUsPerRequest.toFixed(0)} µs CPU/req)`)
        }
      }
    }
    const peak1 = memoryOf(gateway.pid).peakMiB
    await gateway.stop()

    // Phase 2: the gateway as it ships, with the response cache on.
    const cached = settings.uncached ? [] : list.filter((s) => s.cacheable)
    let readyCachedMs: number | undefined
    let peak2 = 0
    if (cached.length > 0) {
      const g2 = await startGateway(gatewayEnv)
      targets.push(g2)
      readyCachedMs = g2.readyMs
      for (const s of cached) {
        // The baselines again, in the same slices: the load on this machine has moved since phase 1.
        const [p, g, d] = await measureScenario([{ target: physical }, { target: g2, gateway: true }, ...(s.noDbBaseline ? [] : [{ target: db }])], s.requests)
        rows.push(row(s, 'gateway+cache', g!, { vsPhysical: g!.rps / p!.rps, vsDatabase: d && g!.rps / d.rps }))
        log(
          `  ${s.title} (response cache): ${g!.rps.toFixed(0)} req/s (physical ${p!.rps.toFixed(0)}), p99 ${g!.p99} ms, ${g!.cpuUsPerRequest.toFixed(0)} µs CPU/req`,
        )
      }
      peak2 = memoryOf(g2.pid).peakMiB
    }
    return { mode, dataset, readyMs: gateway.readyMs, readyCachedMs, peakRssMiB: Math.max(peak1, peak2), rows }
  } finally {
    for (const t of targets) await t.stop()
  }
}

/** The bench dataset in BENCH_DB_NAME: the kept one when allowed and current, else generated. */
async function benchDataset(): Promise<DatasetInfo> {
  log(`PostgreSQL: database ${settings.database} on ${new URL(settings.adminUrl).host}`)
  const url = databaseUrl(settings.adminUrl, settings.database)
  const kept = settings.keepDb ? await keptDataset(settings.adminUrl, settings.database) : undefined
  if (kept) {
    log(`  reusing the dataset generated at ${kept.anchor}`)
    return kept
  }
  await createDatabase(settings.adminUrl, settings.database)
  execFileSync(process.execPath, [path.join(ROOT, 'bin/vaultgate.js'), 'migrate'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  log('  generating the dataset')
  return generateDataset(url, log)
}

async function postgresMode(): Promise<ModeResult> {
  const url = databaseUrl(settings.adminUrl, settings.database)
  const info = await benchDataset()
  try {
    const dataset = info
    const build = async (gatewayUrl: string) => {
      log('  following a wallet history to page 1,000')
      const deepCursor = await cursorOfPage(gatewayUrl, `/v1/users/${dataset.whale}/vaults/${dataset.vaultIds[0]}/transactions`, 1000)
      return scenarios({
        vaultIds: dataset.vaultIds,
        history: { address: dataset.whale, vaultId: dataset.vaultIds[0]!, deepCursor },
        dashboardWallet: dataset.dashboardWallet,
        keys: { rawKeys: Array.from({ length: KEYS }, (_, i) => rawKeyOf(i + 1)), internalToken: INTERNAL_TOKEN },
      })
    }
    return await runMode('postgres', { DATABASE_URL: url }, { DATABASE_URL: url }, build, { ...info.counts, generatedInMs: info.generatedInMs })
  } finally {
    if (!settings.keepDb && !datasetLater) await dropDatabase(settings.adminUrl, settings.database)
  }
}

async function embeddedMode(): Promise<ModeResult> {
  log('Embedded PGlite with the demo data')
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vaultgate-bench-'))
  try {
    const dataDir = path.join(dir, 'data')
    // The first start migrates and loads the demo data; the measured starts find both done.
    const first = await startGateway({ DATA_DIR: dataDir })
    const vaultIds = ((await (await fetch(`${first.url}/v1/vaults?limit=200`)).json()) as { items: { id: string }[] }).items.map((v) => v.id)
    await first.stop()
    // The database limit reads its own copy: PGlite belongs to one process.
    await cp(dataDir, path.join(dir, 'copy'), { recursive: true })
    await rm(path.join(dir, 'copy', 'vaultgate.lock'), { force: true, recursive: true })
    return await runMode('embedded', { DATA_DIR: dataDir }, { PGLITE_DIR: path.join(dir, 'copy') }, async () => scenarios({ vaultIds }), {
      vaults: vaultIds.length,
    })
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const started = new Date()
const modes: ModeResult[] = []
if (sections.includes('main')) {
  if (settings.modes.includes('postgres')) modes.push(await postgresMode())
  if (settings.modes.includes('embedded')) modes.push(await embeddedMode())
}

// A large import through a running gateway: /healthz p99 during it and the RSS after it, against
// their bounds (bench/import-under-load.ts). Left out with --only, which measures one scenario.
const imports: ImportUnderLoad[] = []
if (!settings.only && sections.includes('import')) {
  for (const mode of settings.modes) {
    if (mode === 'postgres') {
      const name = `${settings.database}_import`
      await createDatabase(settings.adminUrl, name)
      try {
        imports.push(await importUnderLoad('postgres', { DATABASE_URL: databaseUrl(settings.adminUrl, name) }))
      } finally {
        await dropDatabase(settings.adminUrl, name)
      }
    } else if (mode === 'embedded') {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'vaultgate-bench-import-'))
      try {
        imports.push(await importUnderLoad('embedded', { DATA_DIR: path.join(dir, 'data') }))
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    }
    log(formatImportUnderLoad(imports.at(-1)!))
  }
}

// Issues 28 and 29 (docs/performance.md "GraphQL clients and shared live work"), on the bench
// dataset in PostgreSQL (`live` on a copy of it: its imports change a vault).
const extra: { clients?: ClientsResult; subscribers?: IdleResult[]; live?: SharedLiveRow[]; replicas?: ReplicasResult } = {}
const sliceSettings = { seconds: settings.seconds, warmupSeconds: settings.warmupSeconds, rounds: settings.rounds, connections: settings.connections }
if (datasetLater) {
  const info = await benchDataset()
  const url = databaseUrl(settings.adminUrl, settings.database)
  const ctx = { databaseUrl: url, vaultIds: info.vaultIds, settings: sliceSettings, resultsDir: RESULTS, log }
  if (sections.includes('clients')) {
    log('GraphQL clients (issue 28 a, b)')
    extra.clients = await clientsThroughput(ctx)
  }
  if (sections.includes('subscribers')) {
    log('Idle subscribers (issue 28 c)')
    extra.subscribers = []
    for (const transport of ['websocket', 'sse'] as const) {
      extra.subscribers.push(await idleSubscribers(ctx, transport))
      log(formatIdle(extra.subscribers.slice(-1)))
    }
  }
  if (sections.includes('live')) {
    log('Shared live work (issue 29 e): imports with 0, 1 and 200 subscribers')
    const copy = `${settings.database}_live`
    await dropDatabase(settings.adminUrl, copy)
    const admin = new (await import('pg')).default.Client({ connectionString: settings.adminUrl })
    await admin.connect()
    try {
      await admin.query(`CREATE DATABASE ${copy} TEMPLATE ${settings.database}`)
    } finally {
      await admin.end()
    }
    try {
      extra.live = await sharedLive(databaseUrl(settings.adminUrl, copy), info.vaultIds[0]!)
      log(formatSharedLive(extra.live))
    } finally {
      await dropDatabase(settings.adminUrl, copy)
    }
  }
  if (!settings.keepDb) await dropDatabase(settings.adminUrl, settings.database)
}
if (sections.includes('replicas')) extra.replicas = await replicas({ settings: sliceSettings, log })

const commit = (() => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim()
  } catch {
    return undefined
  }
})()
const result = {
  startedAt: started.toISOString(),
  tookSeconds: Math.round((Date.now() - started.getTime()) / 1000),
  commit,
  machine: machine(),
  settings: { ...settings, adminUrl: undefined },
  modes,
  imports,
  ...extra,
}
await mkdir(RESULTS, { recursive: true })
const file = path.join(RESULTS, `bench-${started.toISOString().replace(/[:.]/g, '-')}.json`)
await writeFile(file, `${JSON.stringify(result, null, 2)}\n`)
await writeFile(path.join(RESULTS, 'latest.json'), `${JSON.stringify(result, null, 2)}\n`)
const extraTables = [
  extra.clients && `GraphQL clients (issue 28 a, b)\n\n${formatClients(extra.clients)}`,
  extra.subscribers && `Idle subscribers (issue 28 c)\n\n${formatIdle(extra.subscribers)}`,
  extra.live && `An import with subscribers of one vault (issue 29 e)\n\n${formatSharedLive(extra.live)}`,
  extra.replicas && `One streaming replica (issue 29 d); reads by target: ${JSON.stringify(extra.replicas.readsByTarget)}\n\n${formatReplicas(extra.replicas)}`,
].filter(Boolean)
process.stdout.write(
  `\n${formatTable(result)}\n${imports.map((r) => `\n${formatImportUnderLoad(r)}`).join('')}${extraTables.map((t) => `\n\n${t}`).join('')}\n\nResults: ${path.relative(process.cwd(), file)}\n`,
)
