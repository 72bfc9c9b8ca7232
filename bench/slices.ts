import { readdirSync, readFileSync } from 'node:fs'
import { load, type LoadResult } from './load.js'
import { cpuMsOf } from './processes.js'
import { requestKey, type BenchRequest } from './scenarios.js'

// The measurement of the sections beside the main table (bench/clients.ts, bench/replicas.ts):
// targets that each send their own requests (a document by id and the same query in full, a REST
// read and a GraphQL GET), measured in alternating slices as bench/run.ts measureScenario does, so
// that a neighbour's burst on this shared machine lands on all of them alike.

export interface SliceTarget {
  label: string
  url: string
  /** The serving process, whose CPU per request is reported. */
  pid: number
  requests: BenchRequest[]
}

export interface SliceSettings {
  seconds: number
  warmupSeconds: number
  rounds: number
  connections: number
}

export interface SliceResult extends LoadResult {
  label: string
  cpuUsPerRequest: number
  /** CPU of each watched group of processes (a database server's backends), µs per request of this target. */
  watchedUsPerRequest: Record<string, number>
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** CPU so far of each process of a set, in ms. */
const cpuByPid = (pids: number[]) => new Map(pids.map((pid) => [pid, cpuMsOf(pid)]))

/**
 * CPU a group of processes used between two readings: a process present at both counts its
 * difference, one started in between counts all of its CPU, and one gone in between (a pool
 * connection closed when idle) is left out: never negative, at worst short by what a process
 * used before it exited.
 */
function cpuBetween(before: Map<number, number>, pids: number[]): number {
  let total = 0
  for (const pid of pids) {
    const now = cpuMsOf(pid)
    if (now > 0) total += now - (before.get(pid) ?? 0)
  }
  return total
}

/**
 * Every process whose parent is `pid` (a PostgreSQL postmaster's backends and workers), and `pid`
 * itself. Read from /proc, so it works for a server run by another OS user.
 */
export function processTree(pid: number): number[] {
  const out = [pid]
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) out.push(Number(entry))
    } catch {
      // Gone between the listing and the read.
    }
  }
  return out
}

export async function measureSlices(targets: SliceTarget[], settings: SliceSettings, watch: Record<string, () => number[]> = {}): Promise<SliceResult[]> {
  for (const t of targets) await load(t.url, t.requests, { seconds: settings.warmupSeconds, connections: settings.connections })
  const slices = targets.map(() => [] as (LoadResult & { cpuMs: number; watchedMs: Record<string, number> })[])
  const sliceSeconds = settings.seconds / settings.rounds
  for (let round = 0; round < settings.rounds; round++) {
    for (const [i, t] of targets.entries()) {
      const groups = Object.entries(watch).map(([name, pids]) => ({ name, pids, before: cpuByPid(pids()) }))
      const cpuBefore = cpuMsOf(t.pid)
      const r = await load(t.url, t.requests, { seconds: sliceSeconds, connections: settings.connections })
      const cpuMs = cpuMsOf(t.pid) - cpuBefore
      const watchedMs = Object.fromEntries(groups.map((g) => [g.name, cpuBetween(g.before, g.pids())]))
      slices[i]!.push({ ...r, cpuMs, watchedMs })
    }
  }
  return targets.map((t, i) => {
    const s = slices[i]!
    const requests = s.reduce((a, x) => a + x.requests, 0)
    const per = (ms: number) => (ms * 1000) / Math.max(1, requests)
    return {
      label: t.label,
      requests,
      rps: s.reduce((a, x) => a + x.rps, 0) / s.length,
      p50: median(s.map((x) => x.p50)),
      p99: median(s.map((x) => x.p99)),
      failures: s.reduce((a, x) => a + x.failures, 0),
      cpuUsPerRequest: per(s.reduce((a, x) => a + x.cpuMs, 0)),
      watchedUsPerRequest: Object.fromEntries(Object.keys(watch).map((name) => [name, per(s.reduce((a, x) => a + x.watchedMs[name]!, 0))])),
    }
  })
}

export interface Recorded {
  key: string
  status: number
  contentType: string
  body: string
}

/** The gateway's answer to each request: the physical limit serves these bytes (bench/physical-server.ts). */
export async function recordAnswers(url: string, requests: BenchRequest[], what = 'a request'): Promise<Recorded[]> {
  const out: Recorded[] = []
  for (const r of requests) {
    const res = await fetch(url + r.path, { method: r.method, body: r.body, headers: r.headers })
    const body = await res.text()
    if (res.status !== 200) throw new Error(`${what}: ${r.method} ${r.path} answered ${res.status}: ${body.slice(0, 300)}`)
    out.push({ key: requestKey(r.method, r.path, r.body ?? ''), status: res.status, contentType: res.headers.get('content-type') ?? 'application/json', body })
  }
  return out
}

/** Formats a share (0.123 → "12%"). */
export const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '' : `${Math.round(x * 100)}%`)

/** A markdown table with right-aligned numeric columns (every column but the first two). */
export function markdownTable(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))]
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => (r[i] ?? '').length)))
  const line = (r: string[]) => `| ${r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`
  const rule = `|${widths.map((w, i) => (i < 2 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`
  return [line(header), rule, ...cells.slice(1).map(line)].join('\n')
}
