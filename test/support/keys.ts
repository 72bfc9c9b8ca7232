import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Clock } from '../../src/core/clock.js'
import { createTestApp, type TestApp } from './app.js'
import { jwksOf, signSession, testKey, type TestKey } from './jwt.js'

export const ADMIN_TOKEN = 'admin-token-0123456789-0123456789-abcdef'
export const INTERNAL_TOKEN = 'internal-token-0123456789-0123456789-abcdef'

/** A settable clock for the app under test. */
export function manualClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)) {
  let now = start
  const clock: Clock = () => new Date(now)
  return {
    clock,
    now: () => now,
    set: (ms: number) => void (now = ms),
    advance: (ms: number) => void (now += ms),
  }
}

export interface KeysTestApp extends TestApp {
  signer: TestKey
  /** Headers of a wallet session holding `wallets` (signed at the app clock's time). */
  session(wallets: string[], extra?: Record<string, string>): Promise<Record<string, string>>
  /** POST /v1/apiKey as the wallet; returns status and parsed body. */
  create(wallet: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }>
  get(wallet: string): Promise<{ status: number; body: any; headers: Headers }>
  revoke(wallet: string): Promise<{ status: number; body: any; headers: Headers }>
  /** POST /internal/v1/apiKey/verify. */
  verify(apiKey: string): Promise<{ status: number; body: any; headers: Headers }>
  /** DELETE /admin/allowlist/{address}. */
  unlist(wallet: string): Promise<{ status: number; body: any; headers: Headers }>
}

/** An app whose wallet sessions are signed by a key the test made (AUTH_JWKS_FILE), with admin and internal tokens set. */
export async function createKeysTestApp(options: { clock?: Clock; allowlist?: string[]; env?: Record<string, string> } = {}): Promise<KeysTestApp> {
  const dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-keys-'))
  const file = path.join(dir, 'jwks.json')
  const signer = await testKey('ES256', 'k1')
  await writeFile(file, JSON.stringify(jwksOf(signer)))
  const t = await createTestApp({ AUTH_JWKS_FILE: file, ADMIN_TOKEN, INTERNAL_TOKEN, ...options.env }, { clock: options.clock })
  if (options.allowlist?.length) await t.db.prisma.allowlistEntry.createMany({ data: options.allowlist.map((address) => ({ address })) })
  const clock = options.clock ?? (() => new Date())
  const session = async (wallets: string[], extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${await signSession(signer, { wallets }, { now: clock().getTime() })}`,
    ...extra,
  })
  const json = async (res: Response) => ({ status: res.status, body: await res.json(), headers: res.headers })
  return {
    ...t,
    signer,
    session,
    create: async (wallet, body = {}) =>
      json(
        await t.request('/v1/apiKey', {
          method: 'POST',
          headers: { ...(await session([wallet])), 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      ),
    get: async (wallet) => json(await t.request('/v1/apiKey', { headers: await session([wallet]) })),
    revoke: async (wallet) => json(await t.request('/v1/apiKey', { method: 'DELETE', headers: await session([wallet]) })),
    verify: async (apiKey) =>
      json(
        await t.request('/internal/v1/apiKey/verify', {
          method: 'POST',
          headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ apiKey }),
        }),
      ),
    unlist: async (wallet) => json(await t.request(`/admin/allowlist/${wallet}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })),
    close: async () => {
      await t.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
