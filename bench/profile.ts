import { readdirSync, readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { load } from './load.js'
import { startGateway } from './processes.js'
import { rawKeyOf } from './dataset.js'
import { scenarios } from './scenarios.js'

// `npx tsx bench/profile.ts --scenario get_vault [--cache]` (DATABASE_URL = a benchmark database,
// e.g. one kept by `npm run bench -- --quick`): loads the gateway under `node --cpu-prof` with one
// scenario and prints where its CPU time goes, by package and by function (self time).

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'get_vault' },
    cache: { type: 'boolean', default: false },
    seconds: { type: 'string', default: '8' },
    top: { type: 'string', default: '25' },
  },
})
const dir = await mkdtemp(path.join(os.tmpdir(), 'vaultgate-prof-'))
const env: Record<string, string> = process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : { DATA_DIR: process.env.DATA_DIR ?? './.data' }
if (!values.cache) Object.assign(env, { RESPONSE_CACHE_TTL_MS: '0', API_KEY_CACHE_TTL_MS: '0' })
Object.assign(env, { RATE_LIMIT_PUBLIC_PER_MINUTE: '10000000', RATE_LIMIT_VERIFY_PER_MINUTE: '10000000' })
env.INTERNAL_TOKEN = 'bench-internal-token-0123456789-0123456789abcdef'
for (const k of ['LOG_LEVEL', 'DB_POOL_MAX']) if (process.env[k]) env[k] = process.env[k]!
const gateway = await startGateway(env, ['--cpu-prof', `--cpu-prof-dir=${dir}`])
const vaultIds = ((await (await fetch(`${gateway.url}/v1/vaults?limit=200`)).json()) as { items: { id: string }[] }).items.map((v) => v.id)
const scenario = scenarios({
  vaultIds,
  dashboardWallet: process.env.DASHBOARD_WALLET,
  keys: { rawKeys: Array.from({ length: 50 }, (_, i) => rawKeyOf(i + 1)), internalToken: env.INTERNAL_TOKEN },
}).find((s) => s.id === values.scenario)!
const r = await load(gateway.url, scenario.requests, { seconds: Number(values.seconds), connections: 50 })
await gateway.stop()
process.stdout.write(`${scenario.title}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms (under the profiler)\n`)

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!
const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] }
const self = new Map<number, number>()
profile.samples.forEach((id, i) => {
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const total = [...self.values()].reduce((a, b) => a + b, 0)
const byPackage = new Map<string, number>()
const byFunction = new Map<string, number>()
for (const node of profile.nodes) {
  const us = self.get(node.id) ?? 0
  const url = node.callFrame.url
  const pkg = packageOf(node)
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us)
  const fn = `${node.callFrame.functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber + 1}`
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us)
}
function packageOf(node: Node): string {
  const url = node.callFrame.url
  return url.includes('node_modules/')
    ? url
        .split('node_modules/')
        .pop()!
        .split('/')
        .slice(0, url.split('node_modules/').pop()!.startsWith('@') ? 2 : 1)
        .join('/')
    : url.includes('/dist/')
      ? `vaultgate ${url.split('/dist/').pop()}`
      : url.startsWith('node:')
        ? 'node core'
        : node.callFrame.functionName.startsWith('(')
          ? node.callFrame.functionName
          : url || '(native)'
}
// Inclusive: the share of samples with the package anywhere on the stack (who causes the work).
const parent = new Map<number, number>()
for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node.id)
const nodesById = new Map(profile.nodes.map((n) => [n.id, n]))
const inclusive = new Map<string, number>()
profile.samples.forEach((id, i) => {
  const seen = new Set<string>()
  for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) seen.add(packageOf(nodesById.get(n)!))
  for (const p of seen) inclusive.set(p, (inclusive.get(p) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const inclusiveFn = new Map<string, number>()
profile.samples.forEach((id, i) => {
  const seen = new Set<string>()
  for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
    const f = nodesById.get(n)!.callFrame
    seen.add(`${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`)
  }
  for (const p of seen) inclusiveFn.set(p, (inclusiveFn.get(p) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const show = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `  ${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n')
process.stdout.write(`\nInclusive time by package (on the stack):\n${show(inclusive, 20)}\n`)
if (process.env.PROFILE_INCLUSIVE) process.stdout.write(`\nInclusive time by function:\n${show(inclusiveFn, Number(process.env.PROFILE_INCLUSIVE))}\n`)
process.stdout.write(`\nSelf time by package:\n${show(byPackage, 15)}\n\nSelf time by function:\n${show(byFunction, Number(values.top))}\n`)

// `--callers NAME`: the stacks under which a function spends its self time.
const callersOf = process.env.PROFILE_CALLERS
if (callersOf) {
  const stacks = new Map<string, number>()
  profile.samples.forEach((id, i) => {
    const node = nodesById.get(id)!
    if (node.callFrame.functionName !== callersOf) return
    const chain: string[] = []
    for (let n = parent.get(id); n !== undefined && chain.length < 8; n = parent.get(n)) {
      const f = nodesById.get(n)!.callFrame
      chain.push(`${f.functionName || '(anon)'}@${f.url.split('/').slice(-2).join('/')}`)
    }
    const key = chain.join(' < ')
    stacks.set(key, (stacks.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  process.stdout.write(`\nCallers of ${callersOf}:\n${show(stacks, 8)}\n`)
}
