import { Hono } from 'hono'
import { AllowlistNoteInput } from '../../keys/inputs.js'
import { addToAllowlist, listAllowlist, removeFromAllowlist, type AllowlistEntryView } from '../../keys/allowlist.js'
import { normalizeAddress } from '../../wallets/address.js'
import type { Clock } from '../../core/clock.js'
import type { Db } from '../../db/client.js'
import { badRequest } from '../../core/errors.js'
import { parseInput } from '../../core/input.js'
import type { AppEnv } from '../env.js'
import { parseJsonObject } from '../json-body.js'

const entryJson = (e: AllowlistEntryView) => ({ address: e.address, note: e.note, createdAtMs: e.createdAt.getTime() })

function address(raw: string): string {
  const wallet = normalizeAddress(raw)
  if (wallet === undefined) throw badRequest('The address must be an EVM address (0x followed by 40 hex digits).')
  return wallet
}

function note(text: string): string | undefined {
  if (text.trim() === '') return undefined
  return parseInput(AllowlistNoteInput, parseJsonObject(text)).note ?? undefined
}

/** `/admin/allowlist` (mounted behind the admin token): the wallets that may hold API keys. */
export function allowlistRoutes(db: Db, clock: Clock) {
  const app = new Hono<AppEnv>()
  const ok = (data: unknown) => ({ status: 'ok', data, server_time_ms: Date.now() })

  app.get('/', async (c) => c.json(ok({ items: (await listAllowlist(db)).map(entryJson) })))

  app.put('/:address', async (c) => {
    const wallet = address(c.req.param('address'))
    const { entry, added } = await addToAllowlist(db, wallet, note(await c.req.text()))
    return c.json(ok({ ...entryJson(entry), added }))
  })

  app.delete('/:address', async (c) => {
    const wallet = address(c.req.param('address'))
    const { removed, revokedKeyId } = await removeFromAllowlist(db, wallet, clock)
    return c.json(ok({ address: wallet, removed, revokedKeyId }))
  })
  return app
}
