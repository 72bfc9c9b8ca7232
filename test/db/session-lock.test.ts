import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import { holdSessionLock, type SessionLock } from '../../src/db/session-lock.js'
import { testBackend, testDatabase } from '../support/db.js'
import { eventually } from '../support/eventually.js'

// The lock behind "one chain follower at a time" (src/db/session-lock.ts), against PostgreSQL
// itself: one holder among several asking, a holder whose session is killed stops at once, and the
// lock passes on. The embedded database has no such lock: it belongs to one process.

describe.skipIf(testBackend !== 'postgres')('session advisory lock (postgres)', () => {
  let db: Database
  let url: string
  const locks: SessionLock[] = []
  beforeAll(async () => {
    db = await testDatabase()
    url = db.pool!.options.connectionString!
  })
  afterAll(async () => {
    await Promise.all(locks.map((l) => l.close()))
    await db?.close()
  })

  /** An instance asking for the lock: what it was told, in order. */
  function instance(name: string) {
    const events: string[] = []
    const lock = holdSessionLock({
      connection: { connectionString: url },
      key: 42n,
      applicationName: `lock-test-${name}`,
      retryMs: 100,
      onAcquired: () => events.push('acquired'),
      onLost: () => {
        events.push('lost')
      },
    })
    locks.push(lock)
    return { lock, events }
  }

  const holderPids = async () =>
    (
      await db.prisma.$queryRawUnsafe<{ pid: number; application_name: string }[]>(
        `SELECT l.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.granted AND l.objid = 42 AND a.datname = current_database()`,
      )
    ).map((r) => r.application_name)

  it('is held by one instance; when its session is killed it stops at once and another takes the lock', async () => {
    const a = instance('a')
    await eventually(() => a.lock.held, { what: 'a holds the lock' })
    const b = instance('b')
    await new Promise((r) => setTimeout(r, 400)) // b has asked a few times
    expect([a.lock.held, b.lock.held]).toEqual([true, false])
    expect(await holderPids()).toEqual(['lock-test-a'])

    // A's session dies (a network partition, an administrator, a failover): a hears of it and stops.
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'lock-test-a'`)
    await admin.end()
    await eventually(() => a.events.includes('lost'), { what: 'a told it lost the lock' })
    await eventually(async () => (await holderPids()).length === 1, { what: 'someone holds the lock again' })
    const holders = await holderPids()
    // Exactly one of them holds it, and knows it.
    expect([a.lock.held, b.lock.held].filter(Boolean)).toHaveLength(1)
    expect(holders).toEqual([a.lock.held ? 'lock-test-a' : 'lock-test-b'])
    expect(a.events).toEqual(a.lock.held ? ['acquired', 'lost', 'acquired'] : ['acquired', 'lost'])

    // Closing the holder releases the lock to the other.
    const [holder, other] = a.lock.held ? [a, b] : [b, a]
    await holder.lock.close()
    await eventually(() => other.lock.held, { what: 'the other holds it' })
    expect(await holderPids()).toEqual([other === a ? 'lock-test-a' : 'lock-test-b'])
  })
})
