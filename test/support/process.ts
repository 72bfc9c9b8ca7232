import { spawn, type ChildProcess } from 'node:child_process'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, inject } from 'vitest'
import { freshStorage } from './db.js'
import { packageRoot } from '../../src/core/paths.js'

const entry = path.join(packageRoot, 'src', 'main.ts')

/**
 * A fresh temporary folder holding a migrated, empty embedded data directory under `data/` (a copy
 * of the one made once per run), so a spawned gateway or CLI starts without an initdb. Tests of
 * the first start itself (migrations applied, demo data loaded) use an empty folder instead.
 */
export async function embeddedDataDir(prefix = 'vaultgate-'): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix))
  const data = path.join(dir, 'data')
  const template = inject('pgliteDataDir')
  if (template) await cp(template, data, { recursive: true })
  return data
}

/**
 * The environment a spawned gateway of this suite runs with: a fresh PostgreSQL database, or a
 * migrated embedded data directory without demo data (removed after the suite). Call in a describe.
 */
export function gatewayStorage(prefix: string): () => Record<string, string> {
  let dataDir: string | undefined
  let env: Record<string, string> = {}
  beforeAll(async () => {
    const storage = await freshStorage()
    if (storage.mode === 'postgres') env = { DATABASE_URL: storage.url }
    else {
      dataDir = await embeddedDataDir(prefix)
      env = { DATA_DIR: dataDir, SEED_DEMO: 'false' }
    }
  })
  afterAll(async () => {
    if (dataDir) await rm(path.dirname(dataDir), { recursive: true, force: true })
  })
  return () => env
}

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the CLI from source (tsx) with only the given environment on top of PATH. */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
      cwd: packageRoot,
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

export interface GatewayProcess {
  child: ChildProcess
  url: string
  /** stdout and stderr as they arrived, interleaved. */
  output: () => string
  /** stdout alone (the JSON log lines) and stderr alone (the banner, progress). */
  stdout: () => string
  stderr: () => string
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Starts `vaultgate start` (with `args`) on a free port and resolves once it logs that it is ready. */
export function startGatewayProcess(env: Record<string, string>, timeoutMs = 60_000, args: string[] = []): Promise<GatewayProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', entry, 'start', ...args], {
      cwd: packageRoot,
      env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    })
    let out = ''
    const streams = { stdout: '', stderr: '' }
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`gateway not ready in ${timeoutMs} ms:\n${out}`))
    }, timeoutMs)
    child.stdout.on('data', (d: Buffer) => (streams.stdout += d))
    child.stderr.on('data', (d: Buffer) => (streams.stderr += d))
    const onData = (d: Buffer) => {
      out += d
      const m = /vaultgate ready at (http:\/\/\S+)\/graphql/.exec(out)
      if (m?.[1]) {
        clearTimeout(timer)
        resolve({
          child,
          url: m[1],
          output: () => out,
          stdout: () => streams.stdout,
          stderr: () => streams.stderr,
          stop: (signal = 'SIGTERM') => {
            child.kill(signal)
            return exited
          },
        })
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`gateway exited with ${code} before it was ready:\n${out}`))
    })
  })
}

export { freePort } from './ports.js'
