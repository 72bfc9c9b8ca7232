import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'

// PGlite belongs to one process: a second process opening the same data directory would corrupt
// it. The gateway holds `<DATA_DIR>/vaultgate.lock` (its pid and URL) while it runs; other
// processes read it to refuse, or to talk to the running gateway instead. A pid lock, not an
// mtime lock, so a restart right after a crash does not have to wait for staleness.

export interface LockInfo {
  pid: number
  /** Base URL of the running gateway, once it listens. */
  url?: string
  startedAt: string
}

export class DataDirBusyError extends Error {
  override name = 'DataDirBusyError'
  constructor(
    readonly dataDir: string,
    readonly holder: LockInfo,
  ) {
    super(
      `The data directory ${dataDir} is in use by a running vaultgate (pid ${holder.pid}${holder.url ? `, ${holder.url}` : ''}). ` +
        'Stop it first, or use its admin API.',
    )
  }
}

const lockPath = (dataDir: string) => path.join(path.resolve(dataDir), 'vaultgate.lock')

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The live holder of the data directory, if any (a lock left by a dead process is ignored). */
export async function readLock(dataDir: string): Promise<LockInfo | undefined> {
  try {
    const info = JSON.parse(await readFile(lockPath(dataDir), 'utf8')) as LockInfo
    return info.pid !== process.pid && alive(info.pid) ? info : undefined
  } catch {
    return undefined
  }
}

export interface DataDirLock {
  /** Records the URL the gateway listens on, for CLI commands to find it. */
  setUrl(url: string): Promise<void>
  release(): Promise<void>
}

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = lockPath(dataDir)
  await mkdir(path.dirname(file), { recursive: true })
  const info: LockInfo = { pid: process.pid, startedAt: new Date().toISOString() }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(file, JSON.stringify(info), { flag: 'wx' })
      return {
        setUrl: async (url) => {
          info.url = url
          await writeFile(file, JSON.stringify(info))
        },
        release: () => rm(file, { force: true }),
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
      const holder = await readLock(dataDir)
      if (holder) throw new DataDirBusyError(dataDir, holder)
      await rm(file, { force: true })
    }
  }
  throw new Error(`Could not lock the data directory ${dataDir}.`)
}
