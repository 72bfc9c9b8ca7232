import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packageRoot } from '../src/core/paths.js'
import { testBackend } from './support/db.js'
import { explorerDocument } from './support/explorer-data.js'
import { runCli, embeddedDataDir } from './support/process.js'

const CLEAR = '\r\x1b[2K'

/** Runs the CLI under a pseudo-terminal (util-linux `script`), the way a person at a shell does. */
function runInTerminal(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, '--import', 'tsx', path.join(packageRoot, 'src', 'main.ts'), ...args].map((a) => `'${a}'`).join(' ')
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      cwd: packageRoot,
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', TERM: 'dumb', ...env },
    })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}

describe(`CLI progress (${testBackend})`, () => {
  let dir: string
  let file: string
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-progress-'))
    file = path.join(dir, 'doc.json')
    await writeFile(file, JSON.stringify(explorerDocument))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  const done = 'Imported 2 vault(s), 45 composition snapshot(s), 0 vault snapshot(s), 4 transaction(s).'

  it('shows the steps of an import on a terminal, then clears the line', async () => {
    const r = await runInTerminal(['import', file], { DATA_DIR: await embeddedDataDir('vaultgate-progress-tty-') })
    expect(r.code).toBe(0)
    const output = r.output.replace(/\r\n/g, '\n')
    for (const step of [
      `Reading ${file}…`,
      'Validating the document…',
      'Writing vaults 2/2 (100%)',
      'Writing compositions 45/45 (100%)',
      'Writing transactions 4/4 (100%)',
    ]) {
      expect(output).toContain(`${CLEAR}${step}`)
    }
    expect(output.endsWith(`${CLEAR}${done}\n`)).toBe(true)
  })

  it('prints only the result when its output is piped', async () => {
    const r = await runCli(['import', file], { DATA_DIR: await embeddedDataDir('vaultgate-progress-pipe-'), LOG_LEVEL: 'warn' })
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 0, stdout: `${done}\n` })
    // A quick import prints nothing on stderr. On a slow machine a step that outlasts
    // PLAIN_PROGRESS_INTERVAL_MS (src/core/progress.ts) gets a plain line: never a terminal escape.
    expect([r.stderr.includes('\r'), r.stderr.includes('\x1b')]).toEqual([false, false])
    for (const line of r.stderr.split('\n').filter(Boolean)) {
      expect(line).toMatch(/^(Reading |Parsing |Opening the database|Validating the document|Writing (vaults|compositions|vault_snapshots|transactions))/)
    }
  })
})
