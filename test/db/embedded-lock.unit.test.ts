import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { packageRoot } from '../../src/core/paths.js'
import { DataDirBusyError, lockDataDir, readLock } from '../../src/db/embedded-lock.js'

// Short timings (the library's minimum staleness is 2 s) so a takeover happens within the test.
const timing = { staleMs: 2000, updateMs: 1000 }

/** Another process holding `dir`, as a running gateway does. */
function holder(dir: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(packageRoot, 'test/support/lock-holder.ts'), dir, String(timing.staleMs), String(timing.updateMs)],
    {
      cwd: packageRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve(child))
    child.on('exit', (code) => reject(new Error(`lock holder exited with ${code}`)))
  })
}

describe('the embedded data directory lock', () => {
  const cleanup: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  // Two containers on one volume are both PID 1: the holder's recorded pid is the second opener's
  // own pid (what each sees), or 1. Neither may make the second believe the holder is gone.
  it.each([
    ['the opener’s own pid', process.pid],
    ['pid 1', 1],
  ])('holds while its holder lives even when the recorded pid is %s, and is taken over once the holder died', async (_name, pid) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-lock-'))
    cleanup.push(() => rm(dir, { recursive: true, force: true }))
    const child = await holder(dir)
    cleanup.push(async () => child.kill('SIGKILL'))

    const infoFile = path.join(dir, 'vaultgate.lock.json')
    const info = JSON.parse(await readFile(infoFile, 'utf8'))
    expect(info).toMatchObject({ pid: child.pid, url: 'http://127.0.0.1:4999' })
    await writeFile(infoFile, JSON.stringify({ ...info, pid }))

    expect(await readLock(dir, timing)).toMatchObject({ pid, url: 'http://127.0.0.1:4999' })
    const refused = await lockDataDir(dir, timing).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(refused).toBeInstanceOf(DataDirBusyError)
    expect((refused as Error).message).toBe(
      `The data directory ${dir} is in use by a running vaultgate (pid ${pid} on ${info.hostname}, http://127.0.0.1:4999). Stop it first, or use its admin API.`,
    )
    expect(existsSync(path.join(dir, 'vaultgate.lock'))).toBe(true) // the refused opener left the holder's lock alone

    // Killed outright: no exit handler removes the lock; it goes stale and the next opener takes over.
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
    const lock = await lockDataDir(dir, timing)
    expect(JSON.parse(await readFile(infoFile, 'utf8'))).toMatchObject({ pid: process.pid })
    expect(await readLock(dir, timing)).toBeUndefined() // this process's own lock
    await lock.release()
    expect(existsSync(path.join(dir, 'vaultgate.lock'))).toBe(false)
    expect(existsSync(infoFile)).toBe(false)
  })

  it('is free again for the next opener as soon as its holder releases it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-lock-'))
    cleanup.push(() => rm(dir, { recursive: true, force: true }))
    const first = await lockDataDir(dir, timing)
    await first.release()
    const second = await lockDataDir(dir, timing)
    await second.release()
  })
})
