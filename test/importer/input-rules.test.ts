import { createGzip, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { parseImportJson } from '../../src/importer/json.js'
import { testBackend } from '../support/db.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { listen, liveTransaction, liveVault } from '../support/live.js'

// What POST /admin/import accepts as a body (issue 25 row 9), over a real socket: JSON only, as
// is or gzip-compressed within the import limit, no key given twice, and transaction ids compared
// as ids are (without regard to case). Every refusal writes nothing.

const ADMIN_TOKEN = 'admin-token-for-input-rules-0123456789'
const ALICE = `0x${'a'.repeat(40)}`
const LIMIT_MIB = 256

let t: TestApp
let server: Awaited<ReturnType<typeof listen>>
beforeAll(async () => {
  t = await createTestApp({ ADMIN_TOKEN })
  server = await listen(t.app)
})
afterAll(async () => {
  await server?.stop()
  await t?.close()
})
beforeEach(async () => {
  await t.db.prisma.$executeRawUnsafe('DELETE FROM transactions')
  await t.db.prisma.$executeRawUnsafe('DELETE FROM vaults')
})

async function post(body: string | Uint8Array, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const res = await fetch(`${server.base}/admin/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers },
    body: body as BodyInit,
  })
  return { status: res.status, body: (await res.json()) as unknown }
}

const refused = (code: string, message: string) => ({ status: 'error', error: { code, message }, server_time_ms: expect.any(Number) })

async function stored() {
  const vaults = await t.db.prisma.$queryRawUnsafe<{ id: string }[]>('SELECT id FROM vaults ORDER BY id')
  const transactions = await t.db.prisma.$queryRawUnsafe<{ id: string }[]>('SELECT id FROM transactions ORDER BY id')
  return { vaults: vaults.map((v) => v.id), transactions: transactions.map((x) => x.id) }
}

const nothing = { vaults: [], transactions: [] }
const vault = JSON.stringify(liveVault('v1'))

describe(`import input rules (${testBackend})`, () => {
  it('refuses a key given twice, at the top or in any record, naming where', async () => {
    // JSON.parse would keep the second "vaults" (none) and answer 200 with nothing written.
    expect(await post(`{"vaults":[${vault}],"vaults":[]}`)).toEqual({ status: 400, body: refused('bad_request', 'document: duplicate key "vaults"') })
    // "\u0073tatus" is "status" once decoded.
    const twice = `{"vaults":[${vault.replace('"status":"active"', '"status":"active","\\u0073tatus":"paused"')}]}`
    expect(await post(twice)).toEqual({ status: 400, body: refused('bad_request', 'vaults[0]: duplicate key "status"') })
    expect(
      await post(
        `{"vaults":[${vault},${JSON.stringify(liveVault('v2', { deposit_constraints: { paused: true } })).replace('"paused":true', '"paused":true,"paused":false')}]}`,
      ),
    ).toEqual({
      status: 400,
      body: refused('bad_request', 'vaults[1].deposit_constraints: duplicate key "paused"'),
    })
    expect(await stored()).toEqual(nothing)
  })

  it('refuses a body that is not sent as JSON with 415, before reading it', async () => {
    const document = JSON.stringify({ vaults: [liveVault('v1')] })
    const message = 'The import document must be sent as JSON: Content-Type: application/json.'
    const wrong: Record<string, string>[] = [{ 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }, {}]
    for (const headers of wrong) {
      expect(await post(document, headers)).toEqual({ status: 415, body: refused('unsupported_media_type', message) })
    }
    expect(await post(document, { 'content-type': 'application/json', 'content-encoding': 'br' })).toEqual({
      status: 415,
      body: refused('unsupported_media_type', 'The import document may be sent as is or with Content-Encoding: gzip, nothing else.'),
    })
    expect(await stored()).toEqual(nothing)
    // Parameters and +json types are JSON.
    expect((await post(document, { 'content-type': 'application/vnd.vaultgate+json; charset=utf-8' })).status).toBe(200)
  })

  it('reads a gzip body; refuses one that is not gzip (400) or inflates past the limit (413)', async () => {
    const document = JSON.stringify({ vaults: [liveVault('v1')], transactions: [liveTransaction('t1', 'v1', ALICE)] })
    const gzip = { 'content-type': 'application/json', 'content-encoding': 'gzip' }
    expect(await post(gzipSync(document), gzip)).toEqual({
      status: 200,
      body: { status: 'ok', data: { vaults: 1, compositions: 0, vault_snapshots: 0, transactions: 1 }, server_time_ms: expect.any(Number) },
    })
    expect(await stored()).toEqual({ vaults: ['v1'], transactions: ['t1'] })
    await t.db.prisma.$executeRawUnsafe('DELETE FROM transactions')
    await t.db.prisma.$executeRawUnsafe('DELETE FROM vaults')

    expect(await post(document, gzip)).toEqual({ status: 400, body: refused('bad_request', 'The import document is not valid gzip (Content-Encoding: gzip).') })
    // Before, a gzip body was read as text: "not valid JSON".
    expect(await post(gzipSync(document), { 'content-type': 'application/json', 'content-encoding': 'x-gzip' })).toMatchObject({ status: 200 })
    await t.db.prisma.$executeRawUnsafe('DELETE FROM transactions')
    await t.db.prisma.$executeRawUnsafe('DELETE FROM vaults')

    // A zip bomb: a few hundred KiB that would inflate to one MiB past the limit.
    const bomb = await gzipOfZeros((LIMIT_MIB + 1) * 1024 * 1024)
    expect(bomb.byteLength).toBeLessThan(1024 * 1024)
    expect(await post(bomb, gzip)).toEqual({ status: 413, body: refused('payload_too_large', `The import document is larger than ${LIMIT_MIB} MiB.`) })
    expect(await stored()).toEqual(nothing)
  })

  it('compares transaction ids without regard to case: refused within a document and against stored ones', async () => {
    const twins = JSON.stringify({ vaults: [liveVault('v1')], transactions: [liveTransaction('tx-A1', 'v1', ALICE), liveTransaction('tx-a1', 'v1', ALICE)] })
    expect(await post(twins)).toEqual({
      status: 400,
      body: refused(
        'bad_request',
        'transactions[1].id: duplicate id "tx-a1": differs only in case from transactions[0].id "tx-A1" (transaction ids are compared without regard to case)',
      ),
    })
    expect(await stored()).toEqual(nothing)

    expect((await post(JSON.stringify({ vaults: [liveVault('v1')], transactions: [liveTransaction('tx-A1', 'v1', ALICE)] }))).status).toBe(200)
    // The same id again updates in place; its other spelling is refused, and nothing of that import is written.
    const later = JSON.stringify({
      vaults: [liveVault('v2')],
      transactions: [liveTransaction('t-new', 'v2', ALICE), liveTransaction('TX-a1', 'v2', ALICE)],
    })
    expect(await post(later)).toEqual({
      status: 400,
      body: refused(
        'bad_request',
        'transactions[1].id: "TX-a1" differs only in case from the stored transaction "tx-A1" (transaction ids are compared without regard to case)',
      ),
    })
    expect(await stored()).toEqual({ vaults: ['v1'], transactions: ['tx-A1'] })
    expect((await post(JSON.stringify({ transactions: [liveTransaction('tx-A1', 'v1', ALICE, { amount: '7' })] }))).status).toBe(200)
    expect(await stored()).toEqual({ vaults: ['v1'], transactions: ['tx-A1'] })
  })
})

describe('parseImportJson', () => {
  it('names each repeated key by its path, up to five, counting the rest; escapes and strings with braces do not confuse it', () => {
    const text = '{"a":[{"x":1,"x":2},{"y":"}\\"{,","y":3}],"b":{"c":{"d":1,"d":2}},"a":0,"e":1,"e":2,"f":1,"f":2,"g":1,"g":2}'
    expect(() => parseImportJson(text, 'no')).toThrow(
      'a[0]: duplicate key "x"; a[1]: duplicate key "y"; b.c: duplicate key "d"; document: duplicate key "a"; document: duplicate key "e"; and 2 more problems',
    )
    expect(parseImportJson('{"a":{"b":1},"b":{"a":1},"c":[{"a":1},{"a":2}]}', 'no')).toEqual({ a: { b: 1 }, b: { a: 1 }, c: [{ a: 1 }, { a: 2 }] })
    expect(() => parseImportJson('{"a":', 'not json')).toThrow('not json')
  })
})

/** `bytes` zeros, gzip-compressed a MiB at a time (never held whole). */
function gzipOfZeros(bytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const gz = createGzip({ level: 9 })
    const out: Buffer[] = []
    gz.on('data', (c: Buffer) => out.push(c))
    gz.on('end', () => resolve(Buffer.concat(out)))
    gz.on('error', reject)
    const mib = Buffer.alloc(1024 * 1024)
    let left = bytes
    const write = () => {
      while (left > 0) {
        left -= mib.length
        if (!gz.write(mib)) return gz.once('drain', write)
      }
      gz.end()
    }
    write()
  })
}
