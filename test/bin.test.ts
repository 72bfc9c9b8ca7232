import { execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packageRoot } from '../src/core/paths.js'
import { builtPackage } from './support/built.js'
import { freePort, gatewayStorage } from './support/process.js'

// bin/vaultgate.js is what `npm start` and the installed `vaultgate` command run: these tests run
// it from a compiled copy of the package, on the machine's Node 20 (/usr/bin/node) and on the
// Node running the suite.

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function run(node: string, args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, args, { cwd: options.cwd, env: { PATH: process.env.PATH ?? '', ...options.env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

const oldNode = '/usr/bin/node'
const engines = (JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node

let pkg: Awaited<ReturnType<typeof builtPackage>>
beforeAll(async () => {
  pkg = await builtPackage()
})
afterAll(async () => {
  await pkg?.remove()
})

describe('the runtime check', () => {
  it('refuses Node 20 in one line naming the supported versions, exit code 1', async () => {
    const version = (await promisify(execFile)(oldNode, ['--version'])).stdout.trim().slice(1)
    expect(version).toMatch(/^20\./)
    for (const args of [['start'], ['--help'], []]) {
      const r = await run(oldNode, [path.join(pkg.root, 'bin', 'vaultgate.js'), ...args], { cwd: pkg.root })
      expect(r).toEqual({ code: 1, stdout: '', stderr: `vaultgate: Node.js ${version} is not supported; use Node.js ^22.15.0 || ^24.0.0.\n` })
    }
    expect(engines).toBe('^22.15.0 || ^24.0.0')
  })

  it('lets a supported Node through', async () => {
    const r = await run(process.execPath, [path.join(pkg.root, 'bin', 'vaultgate.js'), '--help'], { cwd: pkg.root })
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/vaultgate start\s+Serve the API/)
  })

  it('installs only on a supported Node (engine-strict)', () => {
    expect(readFileSync(path.join(packageRoot, '.npmrc'), 'utf8')).toMatch(/^engine-strict=true$/m)
  })
})

describe('vaultgate start (npm start) in a folder holding .env', () => {
  const storage = gatewayStorage('vaultgate-dotenv-')
  let folder: string
  beforeAll(async () => {
    folder = await mkdtemp(path.join(tmpdir(), 'vaultgate-dotenv-'))
  })
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true })
  })

  it('reads its settings from .env, and the real environment wins over the file', async () => {
    const port = await freePort()
    // LOG_LEVEL=silent in the file would hide the ready line; the environment's info wins.
    await writeFile(path.join(folder, '.env'), `# copied from .env.example\nPORT=${port}\nHOST=127.0.0.1\nLOG_LEVEL=silent\n`)
    const child = spawn(process.execPath, [path.join(pkg.root, 'bin', 'vaultgate.js'), 'start'], {
      cwd: folder,
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...storage() },
    })
    let stdout = ''
    let stderr = ''
    const exited = new Promise<number | null>((r) => child.on('close', r))
    try {
      const ready = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          stdout += d
          const m = /vaultgate ready at (http:\/\/\S+)\/graphql/.exec(stdout)
          if (m?.[1]) resolve(m[1])
        })
        child.stderr.on('data', (d: Buffer) => (stderr += d))
        exited.then((code) => reject(new Error(`exited with ${code}:\n${stdout}${stderr}`)))
      })
      expect(ready).toBe(`http://127.0.0.1:${port}`)
      expect((await fetch(`${ready}/healthz`)).status).toBe(200)
    } finally {
      child.kill('SIGKILL')
      await exited
    }
  })
})
