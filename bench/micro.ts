import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db.js'
import { createApp } from '../src/app.js'
import { setLogger, createLogger } from '../src/log.js'

const config = loadConfig({ ...process.env, NODE_ENV: 'production', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' })
setLogger(createLogger(config.logLevel))
const db = await openDatabase(config)
const app = createApp({ config, db })
const ids = Array.from({ length: 50 }, (_, i) => `bench-vault-${String(i + 1).padStart(2, '0')}`)

async function bench(name: string, fn: (i: number) => Promise<unknown>, n = 3000, conc = 20) {
  for (let i = 0; i < 300; i++) await fn(i)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let next = 0
  await Promise.all(Array.from({ length: conc }, async () => { while (next < n) await fn(next++) }))
  const cpu = process.cpuUsage(cpu0)
  const wall = performance.now() - t0
  console.log(`${name.padEnd(40)} ${((cpu.user + cpu.system) / n).toFixed(0).padStart(6)} µs CPU/op  ${(n / wall * 1000).toFixed(0)} op/s`)
}
const which = (process.argv[2] ?? 'all').split(',')
const on = (k: string) => which.includes('all') || which.includes(k)
if (on('raw')) await bench('pg pool raw query', (i) => db.pool!.query('SELECT * FROM vaults WHERE id = $1', [ids[i % 50]]))
if (on('prisma')) await bench('prisma findUnique', (i) => db.prisma.vault.findUnique({ where: { id: ids[i % 50]! } }))
if (on('yoga')) {
  const doc = `query Vault($id: ID!) { vault(id: $id) { id name chain chainId symbol baseAsset status tvl sharePrice perfFeeBps mgmtFeeBps contract { address } depositConstraints { maxDeposit minDeposit paused } withdrawConstraints { instantLiquidity instantSlippageMaxBps redeem24hThresholdPctOfAum redeem48hAboveThreshold } icons { dark light } apiEndpoint description docsUrl inceptionDate strategyBrief } }`
  await bench('yoga getResultForParams', (i) => app.yoga.getResultForParams({ params: { query: doc, variables: { id: ids[i % 50] } }, request: new Request('http://x/v1/vaults/' + ids[i % 50]) }, {}) as Promise<unknown>)
}
if (on('fetch')) await bench('app.fetch GET /v1/vaults/:id', async (i) => { const r = await app.fetch(new Request('http://x/v1/vaults/' + ids[i % 50])); await r.text() })
if (on('http')) {
  const { createAdaptorServer } = await import('@hono/node-server')
  const { execFileSync } = await import('node:child_process')
  const { Hono } = await import('hono')
  const h = new Hono()
  const doc = `query Vault($id: ID!) { vault(id: $id) { id name chain chainId symbol baseAsset status tvl sharePrice perfFeeBps mgmtFeeBps contract { address } depositConstraints { maxDeposit minDeposit paused } withdrawConstraints { instantLiquidity instantSlippageMaxBps redeem24hThresholdPctOfAum redeem48hAboveThreshold } icons { dark light } apiEndpoint description docsUrl inceptionDate strategyBrief } }`
  h.get('/raw/:id', async (c) => c.json(await app.yoga.getResultForParams({ params: { query: doc, variables: { id: c.req.param('id') } }, request: c.req.raw }, {})))
  h.get('/plain/:id', async (c) => c.json(await app.yoga.getResultForParams({ params: { query: doc, variables: { id: c.req.param('id') } }, request: new Request(c.req.url) }, {})))
  h.get('/prisma/:id', async (c) => c.json(await db.prisma.vault.findUnique({ where: { id: c.req.param('id') } })))
  h.all('*', (c) => app.fetch(c.req.raw))
  const server = createAdaptorServer({ fetch: h.fetch }) as import('node:http').Server
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const port = (server.address() as import('node:net').AddressInfo).port
  const { spawn } = await import('node:child_process')
  for (const path of ['/v1/vaults/bench-vault-07', '/raw/bench-vault-07', '/plain/bench-vault-07', '/prisma/bench-vault-07']) {
  const cpu0 = process.cpuUsage()
  const out = await new Promise<string>((resolve) => {
    const c = spawn('node_modules/.bin/autocannon', ['-j', '-c', '10', '-d', '3', `http://127.0.0.1:${port}${path}`], { stdio: ['ignore', 'pipe', 'ignore'] })
    let o = ''; c.stdout.on('data', (d) => (o += d)); c.on('exit', () => resolve(o))
  })
  const cpu = process.cpuUsage(cpu0)
  const total = JSON.parse(out).requests.total
  console.log(`http ${path}: ${total} requests, ${((cpu.user + cpu.system) / total).toFixed(0)} µs CPU/req`)
  }
  server.close()
}
await db.close()
