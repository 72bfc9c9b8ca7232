import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { freePort } from '../test/support/ports.js'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export interface Target {
  url: string
  pid: number
  stop(): Promise<void>
}

export interface Gateway extends Target {
  /** From spawn to the first 200 from /readyz. */
  readyMs: number
  stderr(): string
}

function stopper(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      child.once('exit', () => {
        clearTimeout(timer)
        resolve()
      })
      child.kill('SIGTERM')
    })
}

/** `BENCH_GATEWAY_ENV="LOG_LEVEL=silent DB_POOL_MAX=20"`: settings for the gateway, to measure a lever. */
export function extraGatewayEnv(): Record<string, string> {
  const pairs = (process.env.BENCH_GATEWAY_ENV ?? '').split(/\s+/).filter(Boolean)
  return Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]))
}

/**
 * Starts the compiled gateway (`node bin/vaultgate.js start`, as production runs it) and waits
 * until /readyz answers 200. Its log goes to /dev/null, as it would to a collector.
 */
export async function startGateway(env: Record<string, string>, nodeArgs: string[] = []): Promise<Gateway> {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, 'bin/vaultgate.js'), 'start'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), ...env, ...extraGatewayEnv() },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited with code ${child.exitCode}: ${stderr}`)
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) break
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`the gateway was not ready within 120 s: ${stderr}`)
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  return { url, pid: child.pid!, readyMs: performance.now() - started, stop: stopper(child), stderr: () => stderr }
}

/** Starts one of the baseline servers (a TypeScript file run through tsx); it prints its port. */
export async function startBaseline(script: string, args: string[], env: Record<string, string>): Promise<Target> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', script), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (line) resolve((JSON.parse(line) as { port: number }).port)
    })
    child.once('exit', (code) => reject(new Error(`${script} exited with code ${code}`)))
  })
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: stopper(child) }
}

/** Resident memory of a process in MiB: now (VmRSS) and its peak so far (VmHWM). */
export function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0)
    return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 }
  } catch {
    return { rssMiB: 0, peakMiB: 0 }
  }
}

/** Samples a process's RSS every 100 ms until stopped; returns the largest sample. */
export function sampleRss(pid: number): () => number {
  let max = memoryOf(pid).rssMiB
  const timer = setInterval(() => (max = Math.max(max, memoryOf(pid).rssMiB)), 100)
  return () => {
    clearInterval(timer)
    return Math.max(max, memoryOf(pid).rssMiB)
  }
}

/** SQL statements the gateway has sent so far, from its /metrics. */
export async function sqlStatements(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  let total = 0
  for (const m of text.matchAll(/^vaultgate_sql_statement_duration_seconds_count\{[^}]*\} (\d+(?:\.\d+)?)$/gm)) total += Number(m[1])
  return total
}

/** CPU time (user + system) a process has used so far, in milliseconds. */
export function cpuMsOf(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return 0
  }
}
const CLOCK_TICKS = 100
