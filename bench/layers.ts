import { parseArgs } from 'node:util'
import { execute, parse } from 'graphql'
import pg from 'pg'
import { createApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import { createContext } from '../src/graphql/context.js'
import { schema } from '../src/graphql/schema/index.js'
import { fromRequest } from '../src/http/pipeline/exchange.js'
import { restRoutes } from '../src/rest/routes/index.js'
import { fetchHistoryPage } from '../src/wallets/store.js'
import { decodeCursor } from '../src/wallets/history-cursor.js'
import { databaseUrl, keptDataset } from './dataset.js'
import { dbRoutes, operationOf } from './db-queries.js'
import { scenarios, type BenchRequest } from './scenarios.js'

// Where the CPU of an uncached read goes, layer by layer, measured in process (issue 21): each
// layer is timed alone, sequentially (one request at a time, CPU time of this process from
// process.cpuUsage, so a neighbour's load on a shared machine inflates it less than wall time):
//   driver         the hand-written handler of the database limit (one `pg` query, JSON shaping)
//   prisma         the Prisma call(s) behind it, without GraphQL (vault: findUnique; history: its raw statement)
//   graphql        graphql-js `execute` of the route's document on the Pothos schema (resolvers, Prisma, driver)
//   yoga           yoga.getResultForParams (+ envelop plugins: caches, armor, cost, masking, response rules)
//   pipeline       app.fetch(new Request(...)) and reading the answer: the one request pipeline
//                  (admit, cache, route, finish: rate limit, deadline, header policy, log line, metrics)
// The HTTP layer is the bench's CPU per request over HTTP minus the in-process path.
//
//   npx tsx bench/layers.ts [--n 400] [--only get_vault,tx_first] [--layers graphql,pipeline]   (default: the bench's kept dataset)

const { values: flags } = parseArgs({ options: { n: { type: 'string', default: '400' }, only: { type: 'string' }, layers: { type: 'string' } } })
const N = Number(flags.n)
const adminUrl = process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'
const dbName = process.env.BENCH_DB_NAME ?? 'vaultgate_bench'
const info = await keptDataset(adminUrl, dbName)
if (!info) throw new Error(`no kept bench dataset in ${dbName}: run \`BENCH_KEEP_DB=1 npm run bench -- --mode postgres\` first`)
const url = process.env.DATABASE_URL ?? databaseUrl(adminUrl, dbName)

const config = loadConfig({
  NODE_ENV: 'production',
  DATABASE_URL: url,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  RESPONSE_CACHE_TTL_MS: '0',
  API_KEY_CACHE_TTL_MS: '0',
  RATE_LIMIT_PUBLIC_PER_MINUTE: '10000000',
  WEBHOOK_WORKER: 'false',
  INTERNAL_TOKEN: 'bench-internal-token-0123456789-0123456789abcdef',
})
const db = await openDatabase(config)
const app = createApp({ config, db })
await app.ready
const pool = new pg.Pool({ connectionString: url, max: 2 })
const query = async (sql: string, params: unknown[]) => (await pool.query(sql, params)).rows

const base = 'http://127.0.0.1:3000'
const viaPipeline = async (r: BenchRequest) => {
  const res = await app.fetch(
    new Request(base + r.path, {
      method: r.method,
      headers: { ...r.headers, ...(r.body ? { 'content-length': String(Buffer.byteLength(r.body)) } : {}) },
      body: r.body,
    }),
  )
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${r.path}: ${res.status} ${text.slice(0, 200)}`)
  return text
}

/** What GraphQL's context reads of a request (the pipeline's light view, src/http/pipeline/exchange.ts). */
const requestView = (r: BenchRequest) => fromRequest(new Request(base + r.path, { method: r.method, headers: r.headers, body: r.body })).request

/** The GraphQL document and variables a request runs (the REST route's fixed document, or the body's). */
function documentOf(r: BenchRequest): { query: string; variables: Record<string, unknown> } {
  if (r.method === 'POST') return JSON.parse(r.body!) as { query: string; variables: Record<string, unknown> }
  const u = new URL(base + r.path)
  for (const route of restRoutes) {
    if (route.method !== 'GET') continue
    const names = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!)
    const pattern = new RegExp(`^/v1${route.path.replace(/:\w+/g, '([^/]+)')}$`)
    const m = pattern.exec(u.pathname)
    if (!m) continue
    const params = Object.fromEntries(names.map((n, i) => [n, route.params[n]!.parse(m[i + 1], n)]))
    const q = Object.fromEntries([...Object.entries(route.query)].map(([n, p]) => [n, p.parse(u.searchParams.get(n) ?? undefined, n)]))
    return { query: route.document, variables: route.variables({ params, query: q, body: {} } as never) }
  }
  throw new Error(`no route for ${r.path}`)
}

async function cpuPerOp(requests: BenchRequest[], op: (r: BenchRequest) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(50, N); i++) await op(requests[i % requests.length]!)
  const before = process.cpuUsage()
  for (let i = 0; i < N; i++) await op(requests[i % requests.length]!)
  const used = process.cpuUsage(before)
  return (used.user + used.system) / N
}

// The deep cursor, by following next_cursor in process.
const history = `/v1/users/${info.whale}/vaults/${info.vaultIds[0]}/transactions`
let cursor: string | null = null
for (let i = 1; i < 1000; i++)
  cursor = (JSON.parse(await viaPipeline({ method: 'GET', path: `${history}${cursor ? `?cursor=${cursor}` : ''}` })) as { next_cursor: string }).next_cursor
const list = scenarios({ vaultIds: info.vaultIds, history: { address: info.whale, vaultId: info.vaultIds[0]!, deepCursor: cursor! } }).filter(
  (s) => ['get_vault', 'graphql_vault', 'tx_first', 'tx_deep'].includes(s.id) && (!flags.only || flags.only.split(',').includes(s.id)),
)

const rows: Record<string, string | number>[] = []
for (const s of list) {
  const docs = new Map(s.requests.map((r) => [r, documentOf(r)]))
  const parsed = new Map([...docs].map(([r, d]) => [r, parse(d.query)]))
  const layers: [string, (r: BenchRequest) => Promise<unknown>][] = [
    [
      'driver',
      async (r) => {
        const u = new URL(base + r.path)
        const operation = r.method === 'POST' ? operationOf(r.body!) : undefined
        for (const route of dbRoutes) {
          if (route.method !== r.method || (route.operation && route.operation !== operation)) continue
          const m = u.pathname.match(route.pattern)
          if (m) return JSON.stringify((await route.handle({ method: r.method, path: u.pathname, search: u.searchParams, body: r.body ?? '' }, query, m)).body)
        }
        throw new Error(`no database-limit route for ${r.path}`)
      },
    ],
    [
      'prisma',
      async (r) => {
        // The Prisma call(s) behind the read, without GraphQL: the vault row (all columns, as
        // plugin-prisma selects them), or the history page's raw statement.
        if (s.id.startsWith('tx_')) {
          const u = new URL(base + r.path)
          const filter = { address: info.whale, vaultId: info.vaultIds[0]!, type: null }
          const c = u.searchParams.get('cursor')
          return fetchHistoryPage(db.prisma, filter, c ? decodeCursor(c, filter) : null, 50)
        }
        const d = docs.get(r)!
        return db.prisma.vault.findUnique({ where: { id: String(d.variables.id ?? d.variables.vaultId) } })
      },
    ],
    [
      'graphql',
      async (r) => {
        const context = createContext({ db: db.prisma, request: new Request(base + r.path), now: new Date() })
        const result = await execute({ schema, document: parsed.get(r)!, variableValues: docs.get(r)!.variables, contextValue: context })
        if (result.errors) throw new Error(result.errors[0]!.message)
        return JSON.stringify(result)
      },
    ],
    [
      'yoga',
      async (r) => {
        const d = docs.get(r)!
        const request = requestView(r)
        return app.yoga.getResultForParams({ params: { query: d.query, variables: d.variables }, request }, { rest: r.method === 'GET' })
      },
    ],
    ['pipeline', viaPipeline],
  ]
  const row: Record<string, string | number> = { scenario: s.id }
  // Two alternating passes; the lower of each layer's two (the machine is shared).
  for (let pass = 0; pass < 2; pass++) {
    for (const [name, op] of layers) {
      if (flags.layers && !flags.layers.split(',').includes(name)) continue
      const us = await cpuPerOp(s.requests, op)
      row[name] = Math.round(Math.min(us, (row[name] as number | undefined) ?? Infinity))
    }
  }
  rows.push(row)
  process.stderr.write(`${JSON.stringify(row)}\n`)
}

const names = ['driver', 'prisma', 'graphql', 'yoga', 'pipeline']
process.stdout.write(`\nCPU µs per request, in process, sequential (n = ${N}, Node ${process.version})\n\n`)
process.stdout.write(`| scenario | ${names.join(' | ')} |\n|${' --- |'.repeat(names.length + 1)}\n`)
for (const r of rows) process.stdout.write(`| ${r.scenario} | ${names.map((n) => r[n] ?? '').join(' | ')} |\n`)
await app.close()
await pool.end()
await db.close()
process.exit(0)
