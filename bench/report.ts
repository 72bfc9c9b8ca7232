import os from 'node:os'

export interface Row {
  scenario: string
  title: string
  target: 'physical' | 'database' | 'gateway' | 'gateway+cache' | `gateway ${string}`
  rps: number
  /** Milliseconds. */
  p50: number
  p99: number
  requests: number
  failures: number
  /** CPU time of the server process (not the database's) per request, in microseconds. */
  cpuUsPerRequest: number
  /** Gateway rows only. */
  sqlPerRequest?: number
  rssMiB?: number
  vsPhysical?: number
  vsDatabase?: number
}

export interface ModeResult {
  mode: 'postgres' | 'embedded'
  dataset: Record<string, number>
  /** Spawn to the first 200 from /readyz, on an already migrated database. */
  readyMs: number
  readyCachedMs?: number
  /** VmHWM of the gateway processes. */
  peakRssMiB: number
  rows: Row[]
}

export function machine() {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
  }
}

const pct = (x: number | undefined) => (x === undefined ? '' : `${(x * 100).toFixed(0)}%`)

function table(header: string[], lines: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`
  return [fmt(header), `|${widths.map((w, i) => (i < 2 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...lines.map(fmt)].join('\n')
}

/** A Markdown table (it reads well on a terminal and pastes into docs/performance.md as it is). */
export function formatTable(result: { machine: ReturnType<typeof machine>; settings: { seconds: number; connections: number }; modes: ModeResult[] }): string {
  const m = result.machine
  const out = [
    `${m.cores} × ${m.cpu}, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}; ${result.settings.connections} connections, ${result.settings.seconds} s per measurement`,
  ]
  for (const mode of result.modes) {
    out.push(
      '',
      `${mode.mode === 'postgres' ? 'PostgreSQL, generated dataset' : 'Embedded PGlite, demo data'}: ready in ${mode.readyMs.toFixed(0)} ms, peak gateway RSS ${mode.peakRssMiB.toFixed(0)} MiB`,
      '',
    )
    out.push(
      table(
        ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'of physical', 'of database', 'CPU µs/req', 'SQL/req', 'RSS MiB'],
        mode.rows.map((r) => [
          r.title,
          r.target + (r.failures > 0 ? ` (${r.failures} failed)` : ''),
          r.rps.toFixed(0),
          String(r.p50),
          String(r.p99),
          pct(r.vsPhysical),
          pct(r.vsDatabase),
          r.cpuUsPerRequest.toFixed(0),
          r.sqlPerRequest === undefined ? '' : r.sqlPerRequest.toFixed(2),
          r.rssMiB === undefined ? '' : r.rssMiB.toFixed(0),
        ]),
      ),
    )
  }
  return out.join('\n')
}
