import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyPostgres, testBackend } from '../support/db.js'
import { embeddedDataDir, startGatewayProcess, type GatewayProcess } from '../support/process.js'

// A large import through a running gateway (POST /admin/import) must not freeze it: the issue's
// measurement was /healthz stalled for 16.8 s by a 100 MB document and RSS left at 1.25 GB. The
// document is parsed and validated in a worker thread and written in bounded chunks
// (src/http/routes/admin.ts); here /healthz is asked every 20 ms throughout, and memory is read
// before and after. The one latency assertion of the suite, because the issue sets the bound.

const ADMIN_TOKEN = 'import-under-load-admin-token-0123456789abcdef'
const ROWS = Number(process.env.IMPORT_UNDER_LOAD_ROWS ?? 60_000)

function bigDocument(rows: number): string {
  const vault = {
    id: 'load-v1',
    name: 'Load vault',
    chain: 'ethereum',
    chain_id: '1',
    symbol: 'vLOAD',
    base_asset: 'USDC',
    base_asset_price_usd: '1',
    status: 'active',
    tvl: '1000000',
    share_price: '1.05',
    perf_fee_bps: 1000,
    contract: { address: '0x3333333333333333333333333333333333333333' },
    deposit_constraints: {},
    withdraw_constraints: {},
    icons: {},
    api_endpoint: 'https://x.example/api/load-v1',
  }
  const start = Date.parse('2026-01-01T00:00:00.000Z')
  const parts: string[] = []
  for (let i = 0; i < rows; i++) {
    const ts = new Date(start + i * 1000).toISOString()
    parts.push(
      JSON.stringify({
        id: `load-${i}`,
        vault_id: 'load-v1',
        address: `0x${(i % 5000).toString(16).padStart(40, '0')}`,
        type: i % 3 === 0 ? 'withdraw' : 'deposit',
        status: 'completed',
        amount: `${1 + (i % 1000)}.${String(i % 997).padStart(6, '0')}`,
        shares: `${1 + (i % 1000)}.5`,
        timestamp: ts,
        completed_at: ts,
        tx_hash: `0x${i.toString(16).padStart(64, '0')}`,
      }),
    )
  }
  return `{"vaults":[${JSON.stringify(vault)}],"transactions":[${parts.join(',')}]}`
}

const rssOf = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(/^process_resident_memory_bytes (\S+)$/m.exec(text)![1])
}

/**
 * The bound, 100 ms at p99, with PostgreSQL. Embedded PGlite runs its SQL and keeps its
 * heap on the event loop: statements are cut to 100 rows (10–20 ms each, src/http/routes/admin.ts),
 * but a major collection of that heap (~160 MB live) pauses it 100–300 ms on a busy machine, a
 * few times per import (measured with nodejs_gc_duration_seconds): its bound is wider.
 */
const BOUND_MS = testBackend === 'postgres' ? 100 : 250

/**
 * What "near idle" allows above the idle RSS: the document is 20 MB, its parsed form about ten
 * times that. Embedded PGlite's WebAssembly memory grows with a large transaction and never
 * shrinks (docs/performance.md "Imports"): most of what remains there.
 */
const NEAR_IDLE_BYTES = 200e6

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

describe(`a large import through the running gateway (${testBackend})`, () => {
  let gw: GatewayProcess
  beforeAll(async () => {
    const storage: Record<string, string> =
      testBackend === 'postgres' ? { DATABASE_URL: (await emptyPostgres()).url } : { DATA_DIR: await embeddedDataDir('vaultgate-load-') }
    gw = await startGatewayProcess({ ...storage, SEED_DEMO: 'false', ADMIN_TOKEN, LOG_LEVEL: 'info' })
  }, 120_000)
  afterAll(async () => {
    await gw?.stop()
  })

  it('keeps answering /healthz (p99 ≤ 100 ms) and gives its memory back', async () => {
    // Encoded before the probing starts: encoding 20 MB would stall this process, not the gateway.
    const body = Buffer.from(bigDocument(ROWS))
    // Idle is measured after a small import: the route, the worker's modules and the database's
    // own memory warmed up, as on a gateway that has served a while.
    const warmUp = await fetch(`${gw.url}/admin/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: bigDocument(4000),
    })
    expect(warmUp.status).toBe(200)
    await new Promise((r) => setTimeout(r, 2000))
    const idle = await rssOf(gw.url)

    /** Asks /healthz every 20 ms until `until` settles; the latencies, sorted. */
    const probe = async (until: Promise<unknown>) => {
      const latencies: number[] = []
      let going = true
      until.finally(() => (going = false)).catch(() => {})
      while (going) {
        const started = performance.now()
        await (await fetch(`${gw.url}/healthz`)).arrayBuffer()
        latencies.push(performance.now() - started)
        await new Promise((r) => setTimeout(r, 20))
      }
      return latencies.sort((a, b) => a - b)
    }
    // The machine's own latency, before and after the import (a shared CI runner adds its
    // scheduling delays to every answer, and its load drifts): the bound is 100 ms above the worse
    // of the two p99s of /healthz without an import (~2 ms on an idle machine).
    const baselineBefore = percentile(await probe(new Promise((r) => setTimeout(r, 5000))), 99)

    const started = performance.now()
    const answer = fetch(`${gw.url}/admin/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body,
    })
    const sorted = await probe(answer)
    const res = await answer
    const seconds = (performance.now() - started) / 1000
    const baselineP99 = Math.max(baselineBefore, percentile(await probe(new Promise((r) => setTimeout(r, 5000))), 99))
    expect(res.status).toBe(200)
    expect((await res.json()).data).toEqual({ vaults: 1, compositions: 0, vault_snapshots: 0, transactions: ROWS })

    // Memory after the import: freed pages go back to the system over some seconds (the worker's
    // heap at its exit, then the allocator), so it is read until it is back near idle, for at most 30 s.
    let after = await rssOf(gw.url)
    for (let waited = 0; waited < 30_000 && after - idle >= NEAR_IDLE_BYTES; waited += 1000) {
      await new Promise((r) => setTimeout(r, 1000))
      after = await rssOf(gw.url)
    }
    const p99 = percentile(sorted, 99)
    console.info(
      `[import under load] ${(body.length / 1e6).toFixed(1)} MB, ${ROWS} rows in ${seconds.toFixed(1)} s (${Math.round(ROWS / seconds)} rows/s); ` +
        `/healthz without import p99 ${baselineP99.toFixed(1)} ms, during ×${sorted.length}: p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms; ` +
        `RSS idle ${Math.round(idle / 1e6)} MB, after ${Math.round(after / 1e6)} MB`,
    )
    expect(sorted.length).toBeGreaterThan(20)
    expect(p99).toBeLessThanOrEqual(BOUND_MS + baselineP99)
    // Near idle: the document (its bytes, parsed form and chunks) is not kept.
    expect(after - idle).toBeLessThan(NEAR_IDLE_BYTES)

    // Its progress is in the logs: validated, every 5 s of writing, written.
    const lines = gw
      .stdout()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    const own = (msg: string) => lines.filter((l) => l.msg === msg && l.transactions !== 4000 && l.total !== 4000)
    expect(own('import validated; writing')).toEqual([expect.objectContaining({ level: 'info', vaults: 1, transactions: ROWS, compositions: 0 })])
    expect(own('import written')).toEqual([expect.objectContaining({ level: 'info', transactions: ROWS, rowsPerSecond: expect.any(Number) })])
    for (const p of own('import progress'))
      expect(p).toMatchObject({ kind: 'transactions', total: ROWS, done: expect.any(Number), rowsPerSecond: expect.any(Number) })
  }, 180_000)
})
