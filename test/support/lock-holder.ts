// Holds an embedded data directory like a running gateway: `lock-holder.ts DIR STALE_MS UPDATE_MS`.
// Prints "locked" once it holds it, then runs until killed.
import { lockDataDir } from '../../src/db/embedded-lock.js'

const [dir, staleMs, updateMs] = process.argv.slice(2)
const lock = await lockDataDir(dir!, { staleMs: Number(staleMs), updateMs: Number(updateMs) })
await lock.setUrl('http://127.0.0.1:4999')
process.stdout.write('locked\n')
setInterval(() => {}, 60_000)
