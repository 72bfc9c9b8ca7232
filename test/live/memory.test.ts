import v8 from 'node:v8'
import vm from 'node:vm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { liveVault } from '../support/live.js'

// A subscriber that goes away leaves nothing behind: 10,000 subscribe/unsubscribe cycles end with
// no hub listener, no open stream and the heap (after a full GC) where it was.

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void

const QUERIES = [
  { query: 'subscription($id: ID!) { vaultUpdated(id: $id) { id tvl } }', variables: { id: 'mem-a' } },
  { query: 'subscription($a: String!) { walletActivity(address: $a) { id status } }', variables: { a: '0xa11ce00000000000000000000000000000000001' } },
]

describe(`subscribe/unsubscribe cycles (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PUBLIC_PER_MINUTE: '0', SUBSCRIPTIONS_PER_IP: '1000' })
    await importDocument({ vaults: [liveVault('mem-a')] }, t.db.prisma)
  })
  afterAll(() => t.close())

  /** One subscriber: subscribes, waits for the stream's first bytes (it is registered), goes away. */
  const cycle = async (i: number) => {
    const res = await t.app.fetch(
      new Request('http://vaultgate.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify(QUERIES[i % 2]),
      }),
    )
    if (res.status !== 200) throw new Error(`cycle ${i}: status ${res.status}`)
    const reader = res.body!.getReader()
    await reader.read()
    await reader.cancel()
  }
  const run = async (from: number, to: number) => {
    // 20 subscribers at a time.
    for (let i = from; i < to; i += 20) await Promise.all(Array.from({ length: Math.min(20, to - i) }, (_, j) => cycle(i + j)))
  }
  // Several rounds: what a request leaves for later (finalizers of its abort signal) needs turns of the event loop.
  const heapAfterGc = async () => {
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 100))
      gc()
    }
    return process.memoryUsage().heapUsed
  }

  it('leaves no listener, no open stream and no heap growth after 10,000 cycles', { timeout: 300_000 }, async () => {
    await run(0, 1000) // warm: compiled code, caches of parsed documents
    const before = await heapAfterGc()
    await run(1000, 11_000)
    const after = await heapAfterGc()
    expect({ listeners: t.app.subscriptions.listeners, open: t.app.subscriptions.open }).toEqual({ listeners: 0, open: 0 })
    // Each cycle built a request, a context, a stream and a registration: 10,000 of them kept
    // would be tens of MB. What stays is noise of the allocator and the runtime.
    const growthMb = (after - before) / 1024 / 1024
    console.log(`heap after 10,000 cycles: ${growthMb.toFixed(2)} MB growth (${(before / 1024 / 1024).toFixed(1)} → ${(after / 1024 / 1024).toFixed(1)} MB)`)
    expect(growthMb).toBeLessThan(4)
  })
})
