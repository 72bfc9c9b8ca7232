import { DriverAdapterError } from '@prisma/driver-adapter-utils'
import { describe, expect, it } from 'vitest'
import { parseLsn, replicaTrouble } from '../../src/db/replicas.js'

// What src/db/replicas.ts decides without a server: LSN order, and which failures of a replica's
// statement send it to the primary (test/db/replicas.test.ts runs the real thing).

describe('read replica routing rules', () => {
  it('orders LSNs as 64-bit positions, not as text', () => {
    expect(parseLsn('0/16B3748')).toBe(0x16b3748n)
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true)
    expect(parseLsn('0/A') > parseLsn('0/9')).toBe(true)
  })

  it("retries on the primary what the replica could not answer, never a statement's own error", () => {
    const pg = (code: string) =>
      new DriverAdapterError({ kind: 'postgres', code, severity: 'ERROR', message: code, detail: undefined, column: undefined, hint: undefined })
    // Unreachable, closed, shutting down, starting up, a recovery conflict, out of connections.
    expect(replicaTrouble(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true)
    expect(replicaTrouble(new Error('Connection terminated unexpectedly'))).toBe(true)
    expect(replicaTrouble(new DriverAdapterError({ kind: 'DatabaseNotReachable', host: 'r1', port: 5432 }))).toBe(true)
    expect(replicaTrouble(new DriverAdapterError({ kind: 'ConnectionClosed' }))).toBe(true)
    for (const code of ['57P01', '57P03', '40001', '08006', '53300']) expect(replicaTrouble(pg(code)), code).toBe(true)
    // A write refused by the standby, bad input, a timeout of the statement itself: the same on the primary, or never to be written.
    for (const code of ['25006', '22P02', '57014', '42P01']) expect(replicaTrouble(pg(code)), code).toBe(false)
    expect(replicaTrouble(new DriverAdapterError({ kind: 'UniqueConstraintViolation', constraint: undefined }))).toBe(false)
  })
})
