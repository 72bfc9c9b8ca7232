import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import type { Config } from '../../src/config.js'
import { createReplicaPool } from '../../src/db/replicas.js'
import { testBackend } from '../support/db.js'
import { eventually } from '../support/eventually.js'
import { signSession, type TestKey } from '../support/jwt.js'
import { hasPostgresBinaries, startReplicaPair, type ReplicaPair } from '../support/replica.js'
import { startReplicaGateway, type ReplicaGateway } from '../support/replica-gateway.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { vaultDoc } from '../support/wallet-data.js'

// Read replica faults (docs/operations.md "Read replicas", issue 29): a replica whose connections
// drop in the middle of a read, or that stops answering (a network partition), while the gateway
// still believes it well. A TCP proxy (test/support/tcp-proxy.ts) sits between the gateway and the
// standby and plays the fault at the moment a read's statement is on its way, before any health
// poll could have marked the replica down: so each read that met the fault reached the replica, and
// only the retry on the primary (src/db/replicas.ts fallbackFactory) can answer it. Which server
// answered is read from the servers' statement logs and `vaultgate_db_reads_total{target}`. The
// pair is the file's own (test/support/replica.ts), so it runs once per run (the pglite project).

const ADMIN_TOKEN = 'admin-token-for-replica-fault-tests-0123456789ab'
const INTERNAL_TOKEN = 'internal-token-for-replica-fault-tests-012345'
const WALLET = '0x00000000000000000000000000000000000000c2'
const REPLICA_TIMEOUT_MS = 500
/** Concurrent reads fired into each fault, half GraphQL, half REST. */
const READS = 12

/** Statements that read or write vault data (not the health polls). */
const touchesVaults = (line: string) => /"?vaults"?/.test(line) && !/pg_last_wal_replay_lsn|pg_current_wal_flush_lsn/.test(line)
const writes = (line: string) => /\b(INSERT|UPDATE|DELETE|TRUNCATE|COPY|CREATE|ALTER|DROP|GRANT|VACUUM)\b/i.test(line)
/**
 * A chunk of one of Prisma's statements: they are prepared under `vg_…` names (src/db/client.ts
 * statementNames), which every Parse and Bind message carries; the health poll's query is unnamed.
 */
const isReadStatement = (chunk: Buffer) => chunk.includes('vg_')

describe.skipIf(!hasPostgresBinaries || testBackend !== 'pglite')('read replica faults (a primary, a streaming standby, a proxy in between)', () => {
  let pair: ReplicaPair
  let proxy: TcpProxy
  let config: Config
  let app: App
  let signer: TestKey
  let gw: ReplicaGateway
  let fileMark: { primary: number; replica: number }
  let replicaName: string

  const request = (p: string, init?: RequestInit) => app.fetch(new Request(`http://vaultgate.test${p}`, init))
  let n = 0
  /** A GraphQL read of rep-a's TVL: status and body. */
  const readGraphql = async () => {
    const alias = `v${n++}`
    const res = await request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: `{ ${alias}: vault(id: "rep-a") { id tvl } }` }),
    })
    const body = (await res.json()) as { data?: Record<string, unknown> }
    // The alias differs per read: the answer compared is the vault under it.
    return { status: res.status, body: { ...body, data: body.data?.[alias] } }
  }
  const readRest = async () => {
    const res = await request('/v1/vaults/rep-a')
    const body = (await res.json()) as Record<string, unknown>
    delete body.server_time_ms
    return { status: res.status, body }
  }
  /** Both reads as a healthy gateway answers them now (from the primary: the truth). */
  const expectedAnswers = async () => {
    const graphql = await readGraphql()
    const rest = await readRest()
    expect([graphql.status, rest.status]).toEqual([200, 200])
    return { graphql, rest }
  }
  /** READS reads at once, alternating GraphQL and REST. */
  const burst = () => Promise.all(Array.from({ length: READS }, (_, i) => (i % 2 === 0 ? readGraphql() : readRest())))
  /**
   * Bursts until the armed fault has been played (a read reached the replica's connection: the
   * first burst, unless the replica went unusable for a moment); the answers of all of them.
   */
  const untilFault = async (played: () => boolean) => {
    const answers: Awaited<ReturnType<typeof burst>> = []
    await eventually(
      async () => {
        answers.push(...(await burst()))
        return played()
      },
      { what: 'a read reached the replica and met the fault' },
    )
    return answers
  }
  const readyz = async () => (await (await request('/readyz')).json()) as { status: string; data: { replicas: { state: string; error?: string }[] } }
  const replicaState = async () => (await readyz()).data.replicas[0]!.state
  const readsTotal = async (target: string) => {
    const m = new RegExp(`^vaultgate_db_reads_total\\{target="${target}"\\} (\\d+)$`, 'm').exec(await (await request('/metrics')).text())
    return Number(m?.[1] ?? 0)
  }
  /** Until the replica is up and a read reaches it (its statement log shows it). */
  const replicaServing = async () => {
    await eventually(async () => (await replicaState()) === 'up', { what: 'the replica is up', timeoutMs: 20_000 })
    await eventually(
      async () => {
        const mark = pair.mark()
        expect((await readGraphql()).status).toBe(200)
        return pair.since(mark).replica.filter((l) => l.startsWith('vaultgate-replica|') && touchesVaults(l)).length > 0
      },
      { what: 'reads reach the replica' },
    )
  }
  const adminImport = (tvl: string) =>
    request('/admin/import', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ vaults: [vaultDoc('rep-a', { tvl })] }),
    })

  beforeAll(async () => {
    pair = await startReplicaPair()
    fileMark = pair.mark()
    const replica = new URL(pair.replicaUrl)
    proxy = new TcpProxy(replica.hostname, Number(replica.port))
    await proxy.start()
    replica.port = String(proxy.port)
    replicaName = `127.0.0.1:${proxy.port}`
    gw = await startReplicaGateway({
      pair,
      replicaUrl: replica.toString(),
      wallet: WALLET,
      tokens: { admin: ADMIN_TOKEN, internal: INTERNAL_TOKEN },
      env: {
        REPLICA_MAX_LAG_MS: '1000',
        REPLICA_TIMEOUT_MS: String(REPLICA_TIMEOUT_MS),
        // Short, so a read still waiting on the replica's other limits (query_timeout up to the request
        // deadline plus DB_CONNECT_TIMEOUT_MS: Config.pool.queryTimeoutMs) would be answered 503.
        REQUEST_TIMEOUT_MS: '3000',
        // Every read reaches a database.
        RESPONSE_CACHE_TTL_MS: '0',
        RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
        // No pooled connection closes by itself in the middle of a scenario.
        DB_IDLE_TIMEOUT_MS: '600000',
      },
    })
    ;({ config, app, signer } = gw)
  })
  afterAll(async () => {
    await gw?.close()
    await proxy?.cut()
    await pair?.close()
  })

  it.each([
    ['closed', false],
    ['reset', true],
  ])(
    'answers every read when the replica connections are %s in the middle of a read: retried on the primary, and the replica serves again once reachable, without a restart',
    async (_how, reset) => {
      await replicaServing()
      const expected = await expectedAnswers()
      const retried = await readsTotal('primary_retry')
      const mark = pair.mark()
      let cut = false
      const cutting = proxy.cutWhen(isReadStatement, { reset }).then(() => (cut = true))
      try {
        const answers = await untilFault(() => cut)
        await cutting
        expect(answers).toEqual(Array.from({ length: answers.length }, (_, i) => (i % 2 === 0 ? expected.graphql : expected.rest)))
        // The read that met the cut reached the replica's connection and was run again on the primary.
        expect(await readsTotal('primary_retry')).toBeGreaterThan(retried)
        expect(pair.since(mark).primary.filter((l) => l.startsWith('vaultgate|') && touchesVaults(l)).length).toBeGreaterThan(0)
        // Down (it failed a statement, and refuses connections now); the gateway stays ready.
        const ready = await readyz()
        expect(ready.status).toBe('ok')
        expect(ready.data.replicas[0]).toMatchObject({ state: 'down', error: expect.any(String) })
        expect(await (await request('/metrics')).text()).toContain(`vaultgate_db_replica_up{replica="${replicaName}"} 0`)
        // While it stays unreachable, reads go to the primary: still every answer.
        expect(await burst()).toEqual(Array.from({ length: READS }, (_, i) => (i % 2 === 0 ? expected.graphql : expected.rest)))
      } finally {
        await proxy.start()
      }
      // Reachable again: the health poll brings it back, reads reach it.
      await replicaServing()
      expect(await (await request('/metrics')).text()).toContain(`vaultgate_db_replica_up{replica="${replicaName}"} 1`)
    },
  )

  it('answers every read from the primary when the replica stops answering in the middle of a read (a partition: connections held open, nothing forwarded), and uses it again once healed', async () => {
    await replicaServing()
    const expected = await expectedAnswers()
    const retried = await readsTotal('primary_retry')
    const mark = pair.mark()
    let stalled = false
    const stalling = proxy.stallWhen(isReadStatement).then(() => (stalled = true))
    try {
      // Each read that reached the replica waits REPLICA_TIMEOUT_MS, then runs on the primary: well
      // within the 3 s request deadline (without the replica's own timeout it would wait past it).
      const answers = await untilFault(() => stalled)
      await stalling
      expect(answers).toEqual(Array.from({ length: answers.length }, (_, i) => (i % 2 === 0 ? expected.graphql : expected.rest)))
      expect(await readsTotal('primary_retry')).toBeGreaterThan(retried)
      expect(pair.since(mark).primary.filter((l) => l.startsWith('vaultgate|') && touchesVaults(l)).length).toBeGreaterThan(0)
      // Down: its statements and health queries go unanswered.
      const ready = await readyz()
      expect(ready.status).toBe('ok')
      expect(ready.data.replicas[0]).toMatchObject({ state: 'down', error: expect.any(String) })
      // A change imported meanwhile is read at once (from the primary).
      expect(await adminImport('200')).toHaveProperty('status', 200)
      const after = await burst()
      expect(after.map((a) => a.status)).toEqual(Array(READS).fill(200))
      expect(after.map((a) => (a.body as { data?: { tvl: string }; tvl?: string }).data?.tvl ?? (a.body as { tvl?: string }).tvl)).toEqual(
        Array(READS).fill('200'),
      )
    } finally {
      proxy.restore()
    }
    // Healed: the held traffic goes through, the health poll finds it well (it replayed the import).
    await replicaServing()
    expect((await readGraphql()).body).toMatchObject({ data: { tvl: '200' } })
  })

  it('opens replica sessions read only: a write sent through a replica pool fails, even where the server would take it', async () => {
    // A replica's pool pointed at the primary: as a promoted standby or a mistaken URL would be.
    const pool = createReplicaPool(pair.primaryUrl, config)
    const tvl = async () => (await pair.primary(`SELECT tvl::text FROM vaults WHERE id = 'rep-a'`)).rows
    const before = await tvl()
    try {
      expect((await pool.query('SHOW default_transaction_read_only')).rows).toEqual([{ default_transaction_read_only: 'on' }])
      await expect(pool.query(`UPDATE vaults SET tvl = 1 WHERE id = 'rep-a'`)).rejects.toMatchObject({
        code: '25006',
        message: 'cannot execute UPDATE in a read-only transaction',
      })
      expect(await tvl()).toEqual(before)
    } finally {
      await pool.end()
    }
  })

  it('wrote nothing to the replica, through every fault, import and key creation of this file', async () => {
    await replicaServing()
    // Key management and an import, with the replica serving reads beside them.
    const auth = { authorization: `Bearer ${await signSession(signer, { wallets: [WALLET] })}` }
    const created = await request('/v1/apiKey', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' })
    expect(created.status).toBe(200)
    expect(await adminImport('210')).toHaveProperty('status', 200)
    await replicaServing()
    const seen = pair.since(fileMark)
    const gateway = seen.replica.filter((l) => l.startsWith('vaultgate'))
    expect(gateway.filter(touchesVaults).length).toBeGreaterThan(0)
    expect(gateway.filter(writes)).toEqual([])
    // The same statements did write on the primary.
    expect(seen.primary.filter((l) => l.startsWith('vaultgate|') && writes(l) && /api_keys/.test(l)).length).toBeGreaterThan(0)
  })
})
