import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import lockfile from 'proper-lockfile'

// PGlite belongs to one process: a second process opening the same data directory would corrupt
// it. The gateway holds `<DATA_DIR>/vaultgate.lock` while it runs, and describes itself (pid,
// host, URL) in `<DATA_DIR>/vaultgate.lock.json`; other processes read them to refuse, or to talk
// to the running gateway instead.
//
// The lock rests on time, not on process ids: two containers on one volume are both PID 1, and
// each would take the other's pid for its own. The holder refreshes the lock's mtime every few
// seconds (proper-lockfile: an mkdir lock, atomic on local and network filesystems); a lock not
// refreshed for `staleMs` belongs to a dead holder and is taken over. The cost: a restart right
// after a crash waits up to `staleMs` for the old lock to go stale.

export interface LockInfo {
  pid: number
  /** The holder's host name (a container's id, in Docker): which of several containers holds it. */
  hostname?: string
  /** Base URL of the running gateway, once it listens. */
  url?: string
  startedAt: string
}

export class DataDirBusyError extends Error {
  override name = 'DataDirBusyError'
  constructor(
    readonly dataDir: string,
    readonly holder: LockInfo | undefined,
  ) {
    const who = holder ? `pid ${holder.pid}${holder.hostname ? ` on ${holder.hostname}` : ''}${holder.url ? `, ${holder.url}` : ''}` : 'starting'
    super(`The data directory ${dataDir} is in use by a running vaultgate (${who}). Stop it first, or use its admin API.`)
  }
}

export interface LockTiming {
  /**
   * A lock not refreshed for this long is stale (its holder died). Longer than the event loop can
   * be blocked (PGlite runs queries on it: a large import holds it for seconds), or a live holder
   * would lose its lock.
   */
  staleMs?: number
  /** How often the holder refreshes the lock; another opener refuses once it has seen one refresh. */
  updateMs?: number
}

const DEFAULT_STALE_MS = 30_000
const DEFAULT_UPDATE_MS = 5000

const lockPath = (dataDir: string) => path.join(path.resolve(dataDir), 'vaultgate.lock')
const infoPath = (dataDir: string) => path.join(path.resolve(dataDir), 'vaultgate.lock.json')

/** Data directories this process holds (a process reading its own lock finds no other holder). */
const held = new Set<string>()
const heldHere = (dataDir: string) => held.has(path.resolve(dataDir))

async function readInfo(dataDir: string): Promise<LockInfo | undefined> {
  try {
    return JSON.parse(await readFile(infoPath(dataDir), 'utf8')) as LockInfo
  } catch {
    return undefined // not written yet (the holder is starting), or left by a holder that died
  }
}

/** The live holder of the data directory, if another process holds it (a stale lock is ignored). */
export async function readLock(dataDir: string, { staleMs = DEFAULT_STALE_MS }: LockTiming = {}): Promise<LockInfo | undefined> {
  if (heldHere(dataDir)) return undefined
  const locked = await lockfile.check(path.resolve(dataDir), { lockfilePath: lockPath(dataDir), stale: staleMs, realpath: false }).catch(() => false)
  if (!locked) return undefined
  return (await readInfo(dataDir)) ?? { pid: 0, startedAt: '' }
}

export interface DataDirLock {
  /** Records the URL the gateway listens on, for CLI commands to find it. */
  setUrl(url: string): Promise<void>
  release(): Promise<void>
}

const mtimeOf = (file: string) =>
  stat(file).then(
    (s) => s.mtimeMs,
    () => undefined,
  )

/**
 * Takes the data directory, or throws DataDirBusyError while another live process holds it. When
 * the lock is there but its holder may be dead, waits until the holder either refreshes it (alive:
 * refused) or lets it go stale (dead: taken over), at most `staleMs`.
 * `onLost`: called if the lock is taken away while held (its refreshes stalled past `staleMs`).
 */
export async function lockDataDir(
  dataDir: string,
  { staleMs = DEFAULT_STALE_MS, updateMs = DEFAULT_UPDATE_MS, onLost }: LockTiming & { onLost?: (e: Error) => void } = {},
): Promise<DataDirLock> {
  const dir = path.resolve(dataDir)
  await mkdir(dir, { recursive: true })
  const options = {
    lockfilePath: lockPath(dataDir),
    stale: staleMs,
    update: updateMs,
    realpath: false,
    onCompromised: (e: Error) => {
      held.delete(dir)
      if (onLost) onLost(e)
      else throw e
    },
  }
  let seen: number | undefined
  for (;;) {
    let release: () => Promise<void>
    try {
      release = await lockfile.lock(dir, options)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ELOCKED') throw e
      const mtime = await mtimeOf(options.lockfilePath)
      seen ??= mtime
      if (mtime !== undefined && mtime !== seen) throw new DataDirBusyError(dataDir, await readInfo(dataDir))
      await sleep(Math.min(250, updateMs))
      continue
    }
    held.add(dir)
    const info: LockInfo = { pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString() }
    await writeFile(infoPath(dataDir), JSON.stringify(info))
    // Once the lock is lost (taken over after a stall), its files belong to the new holder.
    return {
      setUrl: async (url) => {
        info.url = url
        if (held.has(dir)) await writeFile(infoPath(dataDir), JSON.stringify(info))
      },
      release: async () => {
        if (!held.delete(dir)) return
        await rm(infoPath(dataDir), { force: true })
        await release()
      },
    }
  }
}
