import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import type { Database } from '../../src/db/client.js'
import { importDocument } from '../../src/importer/write.js'
import { testBackend } from '../support/db.js'
import { cacheClearedSince, eventually } from '../support/eventually.js'
import { signSession, type TestKey } from '../support/jwt.js'
import { hasPostgresBinaries, startReplicaPair, type ReplicaPair } from '../support/replica.js'
import { startReplicaGateway, type ReplicaGateway } from '../support/replica-gateway.js'
import { listen } from '../support/live.js'
import { subscribe } from '../support/sse.js'
import { vaultDoc } from '../support/wallet-data.js'

// Read replicas (docs/operations.md "Read replicas", decisions §16) against a real primary and
// streaming standby this file starts (test/support/replica.ts). Which server answered is read from
// the servers' own statement logs (application_name `vaultgate` on the primary's pool,
// `vaultgate-replica` on the replica's). The pair is the file's own, so it runs once per run (in
// the pglite project), whatever the test backend.

const ADMIN_TOKEN = 'admin-token-for-replica-tests-0123456789abcdef'
const INTERNAL_TOKEN = 'internal-token-for-replica-tests-0123456789ab'
const WALLET = '0x00000000000000000000000000000000000000c1'
const MAX_LAG_MS = 1000

/** Statements that read or write vault data (not the health polls). */
const touchesVaults = (line: string) => /"?vaults"?/.test(line) && !/pg_last_wal_replay_lsn|pg_current_wal_lsn/.test(line)
const writes = (line: string) => /\b(INSERT|UPDATE|DELETE)\b/.test(line)

describe.skipIf(!hasPostgresBinaries || testBackend !== 'pglite')('read replicas (a primary and a streaming standby)', () => {
  let pair: ReplicaPair
  let db: Database
  let app: App
  let signer: TestKey
  let gw: ReplicaGateway

  const request = (p: string, init?: RequestInit) => app.fetch(new Request(`http://vaultgate.test${p}`, init))
  let n = 0
  /** A public read the response cache has never seen (a new alias each time), so it reaches a database. */
  const readTvl = async (id = 'rep-a') => {
    const alias = `v${n++}`
    const res = await request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: `{ ${alias}: vault(id: "${id}") { tvl } }` }),
    })
    const body = (await res.json()) as { data?: Record<string, { tvl: string }>; errors?: unknown }
    return { status: res.status, tvl: body.data?.[alias]?.tvl, body }
  }
  const adminImport = (tvl: string) =>
    request('/admin/import', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ vaults: [vaultDoc('rep-a', { tvl })] }),
    })
  const readyz = async () =>
    (await (await request('/readyz')).json()) as { status: string; data: { replicas: { name: string; state: string; lag_ms: number | null }[] } }
  /** One read, answered by the replica. */
  const readsHitReplica = async () => {
    const mark = pair.mark()
    await readTvl()
    return pair.since(mark).replica.filter(touchesVaults).length > 0
  }
  const replicaState = async () => (await readyz()).data.replicas[0]!.state

  beforeAll(async () => {
    pair = await startReplicaPair()
    gw = await startReplicaGateway({
      pair,
      wallet: WALLET,
      tokens: { admin: ADMIN_TOKEN, internal: INTERNAL_TOKEN },
      env: {
        REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
        RESPONSE_CACHE_TTL_MS: '60000',
        // The stop test reads in a loop: well past the per-IP budget.
        RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
      },
    })
    ;({ app, db, signer } = gw)
    await eventually(async () => (await replicaState()) === 'up', { what: 'the replica is up' })
  })
  afterAll(async () => {
    await gw?.close()
    await pair?.close()
  })

  it('sends public reads to the replica and nothing else there; /readyz and metrics show it up', async () => {
    const mark = pair.mark()
    for (let i = 0; i < 3; i++) expect(await readTvl()).toMatchObject({ status: 200, tvl: '100' })
    const seen = pair.since(mark)
    expect(seen.replica.filter(touchesVaults).length).toBeGreaterThanOrEqual(3)
    expect(seen.replica.filter(touchesVaults).every((l) => l.startsWith('vaultgate-replica|'))).toBe(true)
    expect(seen.primary.filter(touchesVaults)).toEqual([])

    const ready = await readyz()
    expect(ready.status).toBe('ok')
    expect(ready.data.replicas).toEqual([
      {
        name: pair.replicaName,
        state: 'up',
        lag_ms: expect.any(Number),
        replay_lsn: expect.stringMatching(/^[0-9A-F]+\/[0-9A-F]+$/),
        last_replay_at_ms: expect.any(Number),
      },
    ])
    const metrics = await (await request('/metrics')).text()
    expect(metrics).toContain(`vaultgate_db_replica_up{replica="${pair.replicaName}"} 1`)
    expect(metrics).toMatch(new RegExp(`vaultgate_db_replica_lag_seconds\\{replica="${pair.replicaName.replace('.', '\\.')}"\\} [0-9.e-]+\\n`))
    expect(metrics).toMatch(/vaultgate_db_reads_total\{target="replica"\} [1-9]/)
  })

  it('keeps writes, key management and key verification on the primary', async () => {
    const mark = pair.mark()
    const auth = { authorization: `Bearer ${await signSession(signer, { wallets: [WALLET] })}` }
    const created = await request('/v1/apiKey', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' })
    expect({ status: created.status, body: created.status === 200 ? 'a key' : await created.text() }).toEqual({ status: 200, body: 'a key' })
    const { apiKey, id } = ((await created.json()) as { data: { apiKey: string; id: string } }).data
    // Seen at once: read on the primary, not on a replica that may not have replayed it yet.
    const got = await request('/v1/apiKey', { headers: auth })
    expect(got.status).toBe(200)
    expect(((await got.json()) as { data: { id: string } }).data.id).toBe(id)
    const verified = await request('/internal/v1/apiKey/verify', {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ apiKey }),
    })
    expect(verified.status).toBe(200)
    expect(((await verified.json()) as { data: { active: boolean } }).data.active).toBe(true)
    expect(await adminImport('110')).toHaveProperty('status', 200)

    const seen = pair.since(mark)
    expect(seen.replica.filter((l) => /api_keys|allowlist|key_events/.test(l))).toEqual([])
    expect(seen.primary.filter((l) => /api_keys/.test(l)).length).toBeGreaterThan(0)
    expect(seen.primary.filter((l) => writes(l) && touchesVaults(l)).length).toBeGreaterThan(0)
    // Nothing is ever written to the replica (a standby would refuse it anyway).
    expect(seen.replica.filter((l) => l.startsWith('vaultgate') && writes(l))).toEqual([])
  })

  it('reads its own writes: after an import it answered, reads (and the response cache) come from the primary until the replica has replayed it', async () => {
    await pair.caughtUp()
    await eventually(async () => (await readTvl()).tvl === '110', { what: 'the replica serves 110' })
    // Cached now from the replica: the REST answer of rep-a.
    expect(await (await request('/v1/vaults/rep-a')).json()).toMatchObject({ tvl: '110' })
    await pair.replica('SELECT pg_wal_replay_pause()')
    try {
      const mark = pair.mark()
      expect(await adminImport('120')).toHaveProperty('status', 200)
      // The replica has not replayed the import: every answer (cached or not) must still show it.
      expect(await (await request('/v1/vaults/rep-a')).json()).toMatchObject({ tvl: '120' })
      expect(await readTvl()).toMatchObject({ status: 200, tvl: '120' })
      expect(await (await request('/v1/vaults/rep-a')).json()).toMatchObject({ tvl: '120' })
      const seen = pair.since(mark)
      expect(seen.replica.filter(touchesVaults)).toEqual([])
      expect(seen.primary.filter((l) => touchesVaults(l) && !writes(l)).length).toBeGreaterThan(0)
      // Paused past REPLICA_MAX_LAG_MS, it is reported lagging (the gateway stays ready).
      await eventually(async () => (await replicaState()) === 'lagging', { what: 'the paused replica is reported lagging' })
      expect((await readyz()).status).toBe('ok')
    } finally {
      await pair.replica('SELECT pg_wal_replay_resume()')
    }
    // Replayed again: back to the replica, without a restart.
    await eventually(async () => (await replicaState()) === 'up', { what: 'the replica is up again' })
    const mark = pair.mark()
    expect(await readTvl()).toMatchObject({ status: 200, tvl: '120' })
    expect(pair.since(mark).replica.filter(touchesVaults).length).toBeGreaterThan(0)
  })

  it('skips a replica lagging past REPLICA_MAX_LAG_MS: no read older than that, even of a change it was not told of', async () => {
    await pair.caughtUp()
    await eventually(async () => (await replicaState()) === 'up', { what: 'the replica is up' })
    await pair.replica('SELECT pg_wal_replay_pause()')
    try {
      // Written behind the gateway's back (no change notification): only the lag bound protects readers.
      await pair.primary(`UPDATE vaults SET tvl = 130 WHERE id = 'rep-a'`)
      const written = Date.now()
      const answers: { at: number; tvl: string | undefined; status: number }[] = []
      await eventually(
        async () => {
          const at = Date.now()
          const r = await readTvl()
          answers.push({ at, tvl: r.tvl, status: r.status })
          return Date.now() - written > 3 * MAX_LAG_MS
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      )
      expect(answers.every((a) => a.status === 200)).toBe(true)
      // Every read begun more than REPLICA_MAX_LAG_MS after the write saw it.
      const late = answers.filter((a) => a.at > written + MAX_LAG_MS)
      expect(late.length).toBeGreaterThan(0)
      expect(late.filter((a) => a.tvl !== '130')).toEqual([])
      expect(await replicaState()).toBe('lagging')
      const mark = pair.mark()
      expect(await readTvl()).toMatchObject({ tvl: '130' })
      expect(pair.since(mark).replica.filter(touchesVaults)).toEqual([])
    } finally {
      await pair.replica('SELECT pg_wal_replay_resume()')
    }
    await eventually(async () => (await replicaState()) === 'up', { what: 'the replica is up again' })
  })

  it("reads another instance's change from the primary once its notification arrives: the response cache and a subscription event never show older data", async () => {
    await pair.caughtUp()
    await eventually(async () => (await replicaState()) === 'up', { what: 'the replica is up' })
    // Over a real socket, as a browser subscribes.
    const server = await listen(app)
    const events = await subscribe(fetch, `${server.base}/graphql`, 'subscription($id: ID!) { vaultUpdated(id: $id) { tvl } }', { id: 'rep-a' })
    expect(events.status).toBe(200)
    try {
      // In the response cache now: 120 if the entry of the test above is still there (the UPDATE
      // above told nobody), 130 if it was refilled since (the import's own change notification
      // may arrive after that test's last read and clear it). Either is older than what follows.
      const before = ((await (await request('/v1/vaults/rep-a')).json()) as { tvl: string }).tvl
      expect(['120', '130']).toContain(before)
      await pair.replica('SELECT pg_wal_replay_pause()')
      const mark = pair.mark()
      const generation = app.responseCache.ticket()
      // Written as another instance would: committed with its change notification, and nothing else told here.
      // Newer than any data time so far: the answer's Data-As-Of tells whose row it read.
      const SNAPSHOT_AT = new Date(Date.now() - 1000).toISOString()
      await importDocument(
        {
          vaults: [vaultDoc('rep-a', { tvl: '150' })],
          vault_snapshots: [{ vault_id: 'rep-a', as_of: SNAPSHOT_AT, share_price: '1', tvl: '150', base_asset_price_usd: '1' }],
        },
        db.prisma,
      )
      expect((await events.next(5000)).data).toEqual({ data: { vaultUpdated: { tvl: '150' } } })
      await cacheClearedSince(app.responseCache, generation)
      const after = await request('/v1/vaults/rep-a')
      expect(await after.json()).toMatchObject({ tvl: '150' })
      // Data-As-Of is the time of the data read (decisions §10, §16): the primary's, which the
      // paused replica has not replayed (its row still has an older data time).
      expect(after.headers.get('data-as-of')).toBe(SNAPSHOT_AT)
      expect(await readTvl()).toMatchObject({ status: 200, tvl: '150' })
      expect(pair.since(mark).replica.filter(touchesVaults)).toEqual([])
      // (Asked after the check above: this statement shows in the replica's log.)
      const [onReplica] = (await pair.replica(`SELECT data_as_of FROM vaults WHERE id = 'rep-a'`)).rows as { data_as_of: Date | null }[]
      expect(onReplica?.data_as_of === null || (onReplica?.data_as_of as Date) < new Date(SNAPSHOT_AT)).toBe(true)
    } finally {
      events.close()
      await server.stop()
      await pair.replica('SELECT pg_wal_replay_resume()')
    }
    await eventually(async () => (await replicaState()) === 'up', { what: 'the replica is up again' })
  })

  it('keeps answering when the replica stops (retried on the primary), and goes back to it when it returns', async () => {
    await pair.caughtUp()
    await eventually(async () => (await replicaState()) === 'up', { what: 'the replica is up' })
    await eventually(readsHitReplica, { what: 'reads reach the replica' })
    // Reads run while the replica is stopped under them.
    const statuses: number[] = []
    const values = new Set<string | undefined>()
    let reading = true
    const load = (async () => {
      while (reading) {
        const r = await readTvl()
        statuses.push(r.status)
        values.add(r.tvl)
        // Timers (the test's own waits) get their turn even if an answer needs no I/O.
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    await eventually(() => statuses.length >= 5)
    await pair.stopReplica()
    try {
      const before = statuses.length
      await eventually(() => statuses.length >= before + 20)
      await eventually(async () => (await replicaState()) === 'down', { what: 'the stopped replica is reported down' })
      const ready = await request('/readyz')
      expect(ready.status).toBe(200)
      expect(((await ready.json()) as { data: { replicas: { error?: string }[] } }).data.replicas[0]).toMatchObject({
        state: 'down',
        error: expect.any(String),
      })
      expect(await (await request('/metrics')).text()).toContain(`vaultgate_db_replica_up{replica="${pair.replicaName}"} 0`)
    } finally {
      reading = false
      await load
      await pair.startReplica()
    }
    expect(statuses.filter((s) => s !== 200)).toEqual([])
    expect([...values]).toEqual(['150'])
    await eventually(async () => (await replicaState()) === 'up', { what: 'the restarted replica is up again', timeoutMs: 20_000 })
    const mark = pair.mark()
    expect(await readTvl()).toMatchObject({ status: 200, tvl: '150' })
    expect(pair.since(mark).replica.filter(touchesVaults).length).toBeGreaterThan(0)
  })
})
