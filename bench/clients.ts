import { request as httpRequest, type ClientRequest } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { documentHash } from '../src/graphql/documents.js'
import { startBaseline, startGateway, type Gateway, type Target } from './processes.js'
import { VAULT_QUERY, type BenchRequest } from './scenarios.js'
import { markdownTable, measureSlices, pct, recordAnswers, type SliceResult, type SliceSettings } from './slices.js'

// Issue 28's figures (docs/performance.md "GraphQL clients and shared live work"): a trusted
// document sent by id against the same query sent whole (uncached: the id skips parsing, never
// costs more), a cached public GET by documentId against a cached REST read (both a share of the
// physical limit), and the memory an idle subscriber holds, over WebSocket and SSE. Run by
// `npm run bench -- --sections clients,subscribers` (bench/run.ts).

export interface ClientsContext {
  /** DATABASE_URL of a database holding the bench dataset (bench/dataset.ts). */
  databaseUrl: string
  vaultIds: string[]
  settings: SliceSettings
  resultsDir: string
  log: (line: string) => void
}

/** The rate limiter runs but never refuses the load generator (as in bench/run.ts). */
const UNLIMITED = { RATE_LIMIT_PUBLIC_PER_MINUTE: '10000000', RATE_LIMIT_VERIFY_PER_MINUTE: '10000000' }

const HASH = documentHash(VAULT_QUERY)

export interface ClientsResult {
  uncached: { physical: SliceResult; database: SliceResult; full: SliceResult; byId: SliceResult }
  cached: {
    physicalRest: SliceResult
    physicalGet: SliceResult
    database: SliceResult
    rest: SliceResult
    get: SliceResult
    post: SliceResult
    physicalPost: SliceResult
  }
}

/** a. and b.: one physical limit, one database limit, an uncached and a cached gateway, in alternating slices. */
export async function clientsThroughput(ctx: ClientsContext): Promise<ClientsResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vaultgate-bench-clients-'))
  const documentsFile = path.join(dir, 'persisted-documents.json')
  await writeFile(documentsFile, JSON.stringify({ [`sha256:${HASH}`]: VAULT_QUERY }))
  const headers = { 'content-type': 'application/json' }
  const full: BenchRequest[] = ctx.vaultIds.map((id) => ({
    method: 'POST',
    path: '/graphql',
    body: JSON.stringify({ query: VAULT_QUERY, operationName: 'BenchVault', variables: { id } }),
    headers,
  }))
  const byId: BenchRequest[] = ctx.vaultIds.map((id) => ({
    method: 'POST',
    path: '/graphql',
    body: JSON.stringify({ documentId: `sha256:${HASH}`, operationName: 'BenchVault', variables: { id } }),
    headers,
  }))
  // What a browser's fetch or a CDN sends: no CSRF header (a trusted document needs none), no body.
  const get: BenchRequest[] = ctx.vaultIds.map((id) => ({
    method: 'GET',
    path: `/graphql?documentId=sha256:${HASH}&variables=${encodeURIComponent(JSON.stringify({ id }))}`,
  }))
  const rest: BenchRequest[] = ctx.vaultIds.map((id) => ({ method: 'GET', path: `/v1/vaults/${id}` }))
  const env = { ...UNLIMITED, DATABASE_URL: ctx.databaseUrl, GRAPHQL_DOCUMENTS_FILE: documentsFile }
  const targets: Target[] = []
  try {
    const uncached = await startGateway({ ...env, RESPONSE_CACHE_TTL_MS: '0', API_KEY_CACHE_TTL_MS: '0' })
    targets.push(uncached)
    const recorded = [
      ...(await recordAnswers(uncached.url, full, 'full query')),
      ...(await recordAnswers(uncached.url, byId, 'by documentId')),
      ...(await recordAnswers(uncached.url, get, 'GET by documentId')),
      ...(await recordAnswers(uncached.url, rest, 'REST get_vault')),
    ]
    const answers = path.join(dir, 'answers.json')
    await writeFile(answers, JSON.stringify(recorded))
    const physical = await startBaseline('physical-server.ts', [answers], {})
    targets.push(physical)
    const db = await startBaseline('db-server.ts', [], { DATABASE_URL: ctx.databaseUrl })
    targets.push(db)

    ctx.log('  a. GraphQL vault + composition, uncached: the query in full and its documentId')
    const [p, d, f, b] = await measureSlices(
      [
        { label: 'physical', url: physical.url, pid: physical.pid, requests: full },
        { label: 'database', url: db.url, pid: db.pid, requests: full },
        { label: 'gateway, query in full', url: uncached.url, pid: uncached.pid, requests: full },
        { label: 'gateway, documentId', url: uncached.url, pid: uncached.pid, requests: byId },
      ],
      ctx.settings,
    )
    ctx.log(
      `    full ${f!.rps.toFixed(0)} req/s ${f!.cpuUsPerRequest.toFixed(0)} µs CPU/req; by id ${b!.rps.toFixed(0)} req/s ${b!.cpuUsPerRequest.toFixed(0)} µs CPU/req`,
    )
    await uncached.stop()

    const cached = await startGateway(env)
    targets.push(cached)
    ctx.log('  b. cached: GET by documentId, the same query by POST, and REST get_vault')
    const [pr, pg, pp, dr, r, g, po] = await measureSlices(
      [
        { label: 'physical, REST', url: physical.url, pid: physical.pid, requests: rest },
        { label: 'physical, GET by documentId', url: physical.url, pid: physical.pid, requests: get },
        { label: 'physical, POST query', url: physical.url, pid: physical.pid, requests: full },
        { label: 'database, REST', url: db.url, pid: db.pid, requests: rest },
        { label: 'gateway+cache, REST get_vault', url: cached.url, pid: cached.pid, requests: rest },
        { label: 'gateway+cache, GET by documentId', url: cached.url, pid: cached.pid, requests: get },
        { label: 'gateway+cache, POST query', url: cached.url, pid: cached.pid, requests: full },
      ],
      ctx.settings,
    )
    ctx.log(`    REST ${pct(r!.rps / pr!.rps)} of physical; GET by id ${pct(g!.rps / pg!.rps)}; POST ${pct(po!.rps / pp!.rps)}`)
    return {
      uncached: { physical: p!, database: d!, full: f!, byId: b! },
      cached: { physicalRest: pr!, physicalGet: pg!, physicalPost: pp!, database: dr!, rest: r!, get: g!, post: po! },
    }
  } finally {
    for (const t of targets) await t.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

export function formatClients(r: ClientsResult): string {
  const u = r.uncached
  const c = r.cached
  const line = (scenario: string, x: SliceResult, physical?: SliceResult, database?: SliceResult) => [
    scenario,
    x.label,
    Math.round(x.rps),
    x.p50,
    x.p99,
    pct(physical && x.rps / physical.rps),
    pct(database && x.rps / database.rps),
    Math.round(x.cpuUsPerRequest),
  ]
  return markdownTable(
    ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'of physical', 'of database', 'CPU µs/req'],
    [
      line('a. vault + composition, uncached', u.physical),
      line('a. vault + composition, uncached', u.database),
      line('a. vault + composition, uncached', u.full, u.physical, u.database),
      line('a. vault + composition, uncached', u.byId, u.physical, u.database),
      line('b. cached public read', c.physicalRest),
      line('b. cached public read', c.database),
      line('b. cached public read', c.rest, c.physicalRest, c.database),
      line('b. cached public read', c.physicalGet),
      line('b. cached public read', c.get, c.physicalGet),
      line('b. cached public read', c.physicalPost),
      line('b. cached public read', c.post, c.physicalPost),
    ],
  )
}

// --- c. idle subscribers -------------------------------------------------------------------------

export interface IdleResult {
  transport: 'websocket' | 'sse'
  subscribers: number
  /** After a full collection (the gateway runs with a GC on SIGUSR2: bench/gc-on-signal.cjs). */
  before: { rssMiB: number; heapMiB: number }
  after: { rssMiB: number; heapMiB: number }
  rssKiBEach: number
  heapKiBEach: number
  openSeconds: number
}

const SUBSCRIPTION = 'subscription BenchIdle($id: ID!) { vaultUpdated(id: $id) { id tvl sharePrice } }'

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)
  return m ? Number(m[1]) : Number.NaN
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The gateway's memory after a full collection: RSS and used heap, in MiB. */
async function settledMemory(gateway: Gateway): Promise<{ rssMiB: number; heapMiB: number }> {
  const samples: { rssMiB: number; heapMiB: number }[] = []
  for (let i = 0; i < 3; i++) {
    process.kill(gateway.pid, 'SIGUSR2')
    await sleep(1500)
    samples.push({
      rssMiB: (await metric(gateway.url, 'process_resident_memory_bytes')) / 2 ** 20,
      heapMiB: (await metric(gateway.url, 'nodejs_heap_size_used_bytes')) / 2 ** 20,
    })
  }
  // The lowest of three: a sample may land on garbage made by serving /metrics itself.
  return { rssMiB: Math.min(...samples.map((s) => s.rssMiB)), heapMiB: Math.min(...samples.map((s) => s.heapMiB)) }
}

interface Opened {
  close(): void
}

/** One graphql-ws client (its own socket) and one subscription on it, resolved once the server has acknowledged the connection. */
async function openWs(url: string, id: string): Promise<Opened> {
  let client!: Client
  await new Promise<void>((resolve, reject) => {
    client = createClient({
      url: `${url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: false,
      on: { connected: () => resolve(), closed: (e) => reject(new Error(`closed: ${JSON.stringify(e)}`)) },
    })
  })
  client.subscribe({ query: SUBSCRIPTION, variables: { id } }, { next: () => {}, error: () => {}, complete: () => {} })
  return { close: () => void client.dispose() }
}

/** One SSE subscription on its own connection (node:http, no pooling), resolved with the response headers. */
async function openSse(url: string, id: string): Promise<Opened> {
  const u = new URL(`${url}/graphql`)
  let req!: ClientRequest
  await new Promise<void>((resolve, reject) => {
    req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`SSE answered ${res.statusCode}`))
        res.on('data', () => {})
        res.on('error', () => {})
        resolve()
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify({ query: SUBSCRIPTION, variables: { id } }))
  })
  return { close: () => req.destroy() }
}

/** c.: a fresh gateway per transport, its memory after a full GC before and with `count` idle subscribers. */
export async function idleSubscribers(ctx: ClientsContext, transport: 'websocket' | 'sse', count = 1000): Promise<IdleResult> {
  const gateway = await startGateway(
    {
      ...UNLIMITED,
      DATABASE_URL: ctx.databaseUrl,
      // The caps are settings (docs/configuration.md): the bench opens them all from one address.
      SUBSCRIPTIONS_PER_IP: String(count + 100),
      SUBSCRIPTIONS_MAX: String(count + 100),
    },
    ['--expose-gc', '--require', path.join(import.meta.dirname, 'gc-on-signal.cjs')],
  )
  const open = transport === 'websocket' ? openWs : openSse
  const opened: Opened[] = []
  try {
    // Warm up: the route, the subscription's code and one shared execution per vault, as on a gateway that has served a while.
    const warm = await Promise.all(ctx.vaultIds.map((id) => open(gateway.url, id)))
    await sleep(1000)
    for (const w of warm) w.close()
    await sleep(1000)
    const before = await settledMemory(gateway)
    const started = performance.now()
    for (let i = 0; i < count; i += 50) {
      opened.push(
        ...(await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, j) => open(gateway.url, ctx.vaultIds[(i + j) % ctx.vaultIds.length]!)))),
      )
    }
    for (let waited = 0; (await metric(gateway.url, 'vaultgate_subscriptions_open')) < count; waited += 100) {
      if (waited > 30_000) throw new Error(`fewer than ${count} subscriptions open after 30 s`)
      await sleep(100)
    }
    const openSeconds = (performance.now() - started) / 1000
    await sleep(1000)
    const after = await settledMemory(gateway)
    return {
      transport,
      subscribers: count,
      before,
      after,
      rssKiBEach: ((after.rssMiB - before.rssMiB) * 1024) / count,
      heapKiBEach: ((after.heapMiB - before.heapMiB) * 1024) / count,
      openSeconds,
    }
  } finally {
    for (const o of opened) o.close()
    await gateway.stop()
  }
}

export function formatIdle(rs: IdleResult[]): string {
  return markdownTable(
    ['transport', 'subscribers', 'RSS MiB before → with', 'heap MiB before → with', 'RSS KiB each', 'heap KiB each'],
    rs.map((r) => [
      r.transport === 'websocket' ? 'WebSocket (graphql-transport-ws)' : 'SSE (distinct connections)',
      String(r.subscribers),
      `${r.before.rssMiB.toFixed(1)} → ${r.after.rssMiB.toFixed(1)}`,
      `${r.before.heapMiB.toFixed(1)} → ${r.after.heapMiB.toFixed(1)}`,
      r.rssKiBEach.toFixed(1),
      r.heapKiBEach.toFixed(1),
    ]),
  )
}
