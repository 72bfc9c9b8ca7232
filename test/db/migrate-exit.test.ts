import { createHook } from 'node:async_hooks'
import { describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/client.js'
import { emptyPostgres, testBackend } from '../support/db.js'

// `vaultgate migrate` is a one-shot command (a compose service, a Kubernetes Job): it must exit
// as soon as its work is done. Prisma's schema engine arms timers and never clears them.
describe(`applying migrations (${testBackend})`, () => {
  it('leaves no timer of the schema engine holding the process open once it is done', async () => {
    const storage = testBackend === 'postgres' ? await emptyPostgres() : ({ mode: 'embedded', dataDir: 'memory://' } as const)
    const db = await openDatabase({ storage, pool: { max: 2, connectTimeoutMs: 5000, idleTimeoutMs: 1000, statementTimeoutMs: 0 } })
    const engineTimers: NodeJS.Timeout[] = []
    const hook = createHook({
      init(_id, type, _trigger, resource) {
        if (type === 'Timeout' && /schema_engine_bg/.test(new Error().stack ?? '')) engineTimers.push(resource as NodeJS.Timeout)
      },
    }).enable()
    try {
      expect((await db.migrate()).length).toBeGreaterThan(0)
    } finally {
      hook.disable()
      await db.close()
    }
    expect(engineTimers.length).toBeGreaterThan(0) // the engine did arm some: the check below is not vacuous
    expect(engineTimers.filter((t) => t.hasRef())).toEqual([])
  })
})
