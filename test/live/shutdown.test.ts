import { rm } from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshStorage, testBackend } from '../support/db.js'
import { embeddedDataDir, startGatewayProcess } from '../support/process.js'
import { subscribe } from '../support/sse.js'

// A gateway told to stop ends its subscription streams cleanly (`event: complete`, then the
// connection closes) once it stops accepting, rather than holding them until SHUTDOWN_TIMEOUT_MS
// cuts them; its clients subscribe again elsewhere.

describe(`subscriptions of a gateway process told to stop (${testBackend})`, () => {
  let dataDir: string | undefined
  let env: Record<string, string>
  beforeAll(async () => {
    const storage = await freshStorage()
    if (storage.mode === 'postgres') env = { DATABASE_URL: storage.url }
    else {
      dataDir = await embeddedDataDir('vaultgate-live-shutdown-')
      env = { DATA_DIR: dataDir, SEED_DEMO: 'false' }
    }
  })
  afterAll(async () => {
    if (dataDir) await rm(path.dirname(dataDir), { recursive: true, force: true })
  })

  it('ends open streams with `complete` on SIGTERM and exits 0, long before SHUTDOWN_TIMEOUT_MS', async () => {
    // A minute to drain: a stream left open would keep the process alive that long.
    const gw = await startGatewayProcess({ ...env, SHUTDOWN_DELAY_MS: '300', SHUTDOWN_TIMEOUT_MS: '60000' })
    const exited = new Promise<number | null>((resolve) => gw.child.once('exit', (code) => resolve(code)))
    try {
      const s = await subscribe(fetch, `${gw.url}/graphql`, 'subscription { walletActivity(address: "0xa11ce00000000000000000000000000000000001") { id } }')
      expect(s.status).toBe(200)
      gw.child.kill('SIGTERM')
      await s.ended
      expect(s.buffered).toEqual([{ event: 'complete', data: null }])
      // Well within this test's 60 s: the shutdown did not wait for SHUTDOWN_TIMEOUT_MS.
      expect(await exited).toBe(0)
    } finally {
      if (gw.child.exitCode === null) gw.child.kill('SIGKILL')
    }
  })
})
