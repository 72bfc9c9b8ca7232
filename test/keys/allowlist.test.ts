import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { freshStorage, testBackend } from '../support/db.js'
import { ADMIN_TOKEN, createKeysTestApp, manualClock, type KeysTestApp } from '../support/keys.js'
import { runCli, startGatewayProcess, type GatewayProcess, embeddedDataDir } from '../support/process.js'

// decisions.md §7: the allowlist lives in the database; operators manage it over /admin and the CLI.

const W1 = '0xabcdef0000000000000000000000000000000001'
const W2 = '0xabcdef0000000000000000000000000000000002'
const ok = (data: unknown) => ({ status: 'ok', data, server_time_ms: expect.any(Number) })
const error = (code: string, message: string) => ({ status: 'error', error: { code, message }, server_time_ms: expect.any(Number) })

describe(`/admin/allowlist (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock })
  })
  afterAll(() => t.close())

  const admin = async (method: string, p: string, body?: string, token = ADMIN_TOKEN) => {
    const res = await t.request(`/admin/allowlist${p}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body })
    return { status: res.status, body: await res.json() }
  }

  it('adds (lowercased, optionally with a note), lists, and removes', async () => {
    expect(await admin('GET', '')).toEqual({ status: 200, body: ok({ items: [] }) })
    const added = await admin('PUT', `/${W2.toUpperCase().replace('0X', '0x')}`, '{"note":"market maker"}')
    expect(added).toEqual({ status: 200, body: ok({ address: W2, note: 'market maker', createdAtMs: expect.any(Number), added: true }) })
    expect((await admin('PUT', `/${W1}`)).body.data).toMatchObject({ address: W1, note: null, added: true })
    expect((await admin('PUT', `/${W1}`)).body.data).toMatchObject({ address: W1, note: null, added: false })
    expect((await admin('PUT', `/${W1}`, '{"note":"desk"}')).body.data).toMatchObject({ address: W1, note: 'desk', added: false })
    expect((await admin('GET', '')).body.data.items).toEqual([
      { address: W1, note: 'desk', createdAtMs: expect.any(Number) },
      { address: W2, note: 'market maker', createdAtMs: added.body.data.createdAtMs },
    ])
    expect(await admin('DELETE', `/${W2}`)).toEqual({ status: 200, body: ok({ address: W2, removed: true, revokedKeyId: null }) })
    expect((await admin('DELETE', `/${W2}`)).body.data).toEqual({ address: W2, removed: false, revokedKeyId: null })
    expect((await admin('GET', '')).body.data.items.map((e: { address: string }) => e.address)).toEqual([W1])
  })

  it('revokes the key of a removed wallet in the same transaction, with an audit event', async () => {
    await admin('PUT', `/${W2}`)
    const key = (await t.create(W2)).body.data
    expect((await admin('DELETE', `/${W2}`)).body.data).toEqual({ address: W2, removed: true, revokedKeyId: key.id })
    const row = await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } })
    expect([row.revokedAt, row.revokeReason]).toEqual([new Date(time.now()), 'allowlist_removed'])
    expect((await t.create(W2)).body.error.code).toBe('not_whitelisted')
  })

  it('rejects bad input and bad tokens', async () => {
    expect(await admin('PUT', '/0x1234')).toEqual({
      status: 400,
      body: error('bad_request', 'The address must be an EVM address (0x followed by 40 hex digits).'),
    })
    expect(await admin('PUT', `/${W1}`, '{"notes":"x"}')).toEqual({
      status: 400,
      body: error('bad_request', 'Unknown field "notes"; the body may only hold "note".'),
    })
    expect((await admin('PUT', `/${W1}`, '{"note":5}')).status).toBe(400)
    expect(await admin('GET', '', undefined, 'wrong-token-0123456789')).toEqual({
      status: 401,
      body: error('unauthorized', 'A valid admin token is required (Authorization: Bearer <ADMIN_TOKEN>).'),
    })
    const off = createApp({ config: loadConfig({ LOG_LEVEL: 'silent' }), db: t.db })
    try {
      const res = await off.fetch(new Request('http://t/admin/allowlist', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
      expect(res.status).toBe(404)
    } finally {
      await off.close()
    }
  })
})

describe(`allowlist rows deleted by SQL (${testBackend})`, () => {
  const W3 = '0xabcdef0000000000000000000000000000000003'
  const W4 = '0xabcdef0000000000000000000000000000000004'
  const W5 = '0xabcdef0000000000000000000000000000000005'
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ allowlist: [W3, W4, W5] })
  })
  afterAll(() => t.close())

  const events = (wallet: string) =>
    t.db.prisma.keyEvent.findMany({ where: { wallet }, orderBy: { id: 'asc' }, select: { action: true, reason: true, actor: true } })
  /** Until the verifier (its cache dropped by the key channel's NOTIFY) answers as expected. */
  const verifiesAs = async (apiKey: string, expected: Record<string, unknown>) =>
    vi.waitFor(async () => expect((await t.verify(apiKey)).body.data).toMatchObject(expected), { timeout: 5000, interval: 50 })

  it('revokes the wallet key, records it and tells the verifiers, when its row is deleted by SQL; adding the row back revives nothing', async () => {
    const key = (await t.create(W3)).body.data
    // Verified once: the active state is now cached (API_KEY_CACHE_TTL_MS, 30 s).
    expect((await t.verify(key.apiKey)).body.data).toMatchObject({ active: true, keyId: key.id })
    await t.db.prisma.$executeRawUnsafe(`DELETE FROM allowlist WHERE address = '${W3}'`)
    await verifiesAs(key.apiKey, { active: false, keyId: key.id, reason: 'not_whitelisted' })
    const row = await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } })
    expect([row.revokedAt === null, row.revokeReason]).toEqual([false, 'allowlist_removed'])
    expect(await events(W3)).toEqual([
      { action: 'created', reason: null, actor: W3 },
      { action: 'revoked', reason: 'allowlist_removed', actor: 'system' },
    ])
    await t.db.prisma.$executeRawUnsafe(`INSERT INTO allowlist (address) VALUES ('${W3}')`)
    expect((await t.verify(key.apiKey)).body.data).toMatchObject({ active: false, reason: 'not_whitelisted' })
    expect((await t.get(W3)).body.data).toBeNull()
    // The wallet, listed again, creates a new key.
    expect((await t.create(W3)).status).toBe(200)
  })

  it('revokes every listed wallet key on TRUNCATE', async () => {
    const key = (await t.create(W4)).body.data
    expect((await t.verify(key.apiKey)).body.data.active).toBe(true)
    await t.db.prisma.$executeRawUnsafe('TRUNCATE allowlist')
    await verifiesAs(key.apiKey, { active: false, reason: 'not_whitelisted' })
    expect((await events(W4)).at(-1)).toEqual({ action: 'revoked', reason: 'allowlist_removed', actor: 'system' })
    expect(await t.db.prisma.apiKey.count({ where: { revokedAt: null } })).toBe(0)
  })

  it('leaves the admin route one revocation event, by the admin', async () => {
    await t.db.prisma.allowlistEntry.create({ data: { address: W5 } })
    const key = (await t.create(W5)).body.data
    expect((await t.unlist(W5)).body.data).toEqual({ address: W5, removed: true, revokedKeyId: key.id })
    expect(await events(W5)).toEqual([
      { action: 'created', reason: null, actor: W5 },
      { action: 'revoked', reason: 'allowlist_removed', actor: 'admin' },
    ])
  })
})

describe('vaultgate allowlist', () => {
  let dir: string
  let env: Record<string, string>
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-allowlist-'))
    const storage = await freshStorage()
    env = storage.mode === 'postgres' ? { DATABASE_URL: storage.url } : { DATA_DIR: await embeddedDataDir('vaultgate-allowlist-') }
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('adds, lists and removes with direct database access', async () => {
    expect(await runCli(['allowlist', 'add', W1.toUpperCase().replace('0X', '0x'), 'trading', 'desk'], env)).toMatchObject({
      code: 0,
      stdout: `Added ${W1} to the allowlist.\n`,
    })
    const list = await runCli(['allowlist', 'list'], env)
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(new RegExp(`^${W1}  \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  trading desk\\n$`))
    expect(await runCli(['allowlist', 'remove', W1], env)).toMatchObject({ code: 0, stdout: `Removed ${W1} from the allowlist.\n` })
  })

  it('rejects a bad address and a missing action', async () => {
    expect(await runCli(['allowlist', 'add', '0x12'], env)).toMatchObject({
      code: 1,
      stderr: 'vaultgate: 0x12 is not an EVM address (0x followed by 40 hex digits).\n',
    })
    // The admin route's note rule, on the direct database path too.
    expect(await runCli(['allowlist', 'add', W1, 'x'.repeat(501)], env)).toMatchObject({
      code: 1,
      stderr: 'vaultgate: note must be a string of at most 500 characters.\n',
    })
    const usage = await runCli(['allowlist'], env)
    expect(usage.code).toBe(2)
    expect(usage.stderr).toMatch(/^vaultgate: allowlist needs add, remove or list\./)
  })

  describe.runIf(testBackend === 'pglite')('while an embedded gateway owns the data directory', () => {
    let gw: GatewayProcess
    let owned: string
    // biome-ignore lint/suspicious/noDuplicateTestHooks: describe.runIf opens a scope of its own
    beforeAll(async () => {
      owned = await embeddedDataDir('vaultgate-allowlist-gw-')
      gw = await startGatewayProcess({ DATA_DIR: owned, SEED_DEMO: 'false', ADMIN_TOKEN })
    })
    // biome-ignore lint/suspicious/noDuplicateTestHooks: describe.runIf opens a scope of its own
    afterAll(async () => {
      await gw.stop()
      await rm(owned, { recursive: true, force: true })
    })

    it('goes through its admin API, or refuses without the admin token', async () => {
      expect(await runCli(['allowlist', 'add', W2, 'via', 'api'], { DATA_DIR: owned, ADMIN_TOKEN })).toMatchObject({
        code: 0,
        stdout: `Added ${W2} to the allowlist.\n`,
      })
      const res = await fetch(`${gw.url}/admin/allowlist`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect((await res.json()).data.items).toEqual([{ address: W2, note: 'via api', createdAtMs: expect.any(Number) }])
      expect((await runCli(['allowlist', 'list'], { DATA_DIR: owned, ADMIN_TOKEN })).stdout).toMatch(new RegExp(`^${W2}  .+  via api\\n$`))
      const refused = await runCli(['allowlist', 'remove', W2], { DATA_DIR: owned })
      expect(refused.code).toBe(1)
      expect(refused.stderr).toBe(
        `vaultgate: The data directory is in use by the gateway at ${gw.url}; set ADMIN_TOKEN (the same as the gateway's) so this command can use its admin API, or stop the gateway.\n`,
      )
      expect(await runCli(['allowlist', 'remove', W2], { DATA_DIR: owned, ADMIN_TOKEN })).toMatchObject({
        code: 0,
        stdout: `Removed ${W2} from the allowlist.\n`,
      })
      expect(await runCli(['allowlist', 'list'], { DATA_DIR: owned, ADMIN_TOKEN })).toMatchObject({ code: 0, stdout: 'The allowlist is empty.\n' })
    })
  })
})
