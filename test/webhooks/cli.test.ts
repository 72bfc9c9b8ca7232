import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminApiOps, parseWebhooksArgs, runWebhooksCommand, serviceOps, webhookServiceFor, type WebhooksCommand } from '../../src/webhooks/cli.js'
import { emitEvents } from '../../src/webhooks/emit.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { ADMIN_TOKEN } from '../support/keys.js'
import { embeddedDataDir, runCli } from '../support/process.js'
import { insertVaults, txEvent } from './setup.js'

// `vaultgate webhooks …`: the same lines whether the command reaches the database directly or a
// running gateway's admin API; usage problems are refused before anything runs.

let t: TestApp
beforeAll(async () => {
  t = await createTestApp({ ADMIN_TOKEN, WEBHOOK_ALLOW_PRIVATE: 'true' })
  await insertVaults(t.db, 'v1')
})
afterAll(() => t?.close())

const parse = (args: string[]): WebhooksCommand => {
  const parsed = parseWebhooksArgs(args)
  if (!parsed.ok) throw new Error(parsed.message)
  return parsed.command
}

/** The admin API as `callAdmin` reaches it, in process: the envelope's data, or the gateway's refusal. */
const adminCall = async (method: string, path: string, body?: string) => {
  const res = await t.request(`/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  })
  const json = (await res.json()) as { data?: unknown; error?: { message: string } }
  if (!res.ok) throw new Error(json.error!.message)
  return json.data
}

const UUID = '[0-9a-f-]{36}'
const ISO = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z'

describe(`vaultgate webhooks (${testBackend})`, () => {
  it('refuses what it cannot read, naming the problem', () => {
    expect(parseWebhooksArgs([])).toEqual({ ok: false, message: 'webhooks needs add, list, remove or deliveries.' })
    expect(parseWebhooksArgs(['add', 'https://x.example/h'])).toEqual({
      ok: false,
      message: 'webhooks add needs a URL and the event TYPES (comma-separated, or `all`).',
    })
    expect(parseWebhooksArgs(['add', 'https://x.example/h', 'vault.updated,vault.exploded'])).toEqual({
      ok: false,
      message: 'Unknown event type vault.exploded; the types are vault.updated, transaction.created, transaction.status_changed, redeem.completed (or all).',
    })
    expect(parseWebhooksArgs(['deliveries', 'id', 'lost'])).toEqual({
      ok: false,
      message: 'STATUS must be one of pending, delivering, succeeded, dead or all.',
    })
    expect(parseWebhooksArgs(['remove'])).toEqual({ ok: false, message: 'webhooks remove needs one endpoint ID.' })
    expect(parse(['add', 'https://x.example/h', 'all', 'v1,v2'])).toEqual({
      action: 'add',
      url: 'https://x.example/h',
      eventTypes: ['vault.updated', 'transaction.created', 'transaction.status_changed', 'redeem.completed'],
      vaultIds: ['v1', 'v2'],
    })
  })

  for (const via of ['the database', 'the admin API'] as const) {
    it(`adds, lists, shows deliveries and removes through ${via}`, async () => {
      const ops = via === 'the database' ? serviceOps(webhookServiceFor(t.config, t.db.prisma)) : adminApiOps(adminCall)
      const added = await runWebhooksCommand(parse(['add', 'http://127.0.0.1:9/hook', 'transaction.created', 'v1']), ops)
      expect(added).toHaveLength(3)
      expect(added[0]).toMatch(new RegExp(`^Added webhook endpoint (${UUID}) for http://127\\.0\\.0\\.1:9/hook$`))
      expect(added[1]).toBe('  events transaction.created; vaults v1')
      expect(added[2]).toMatch(/^ {2}signing secret \(shown only now; give it to the receiver\): whsec_[A-Za-z0-9+/]{43}=$/)
      const id = /endpoint (\S+) for/.exec(added[0]!)![1]!

      expect(await runWebhooksCommand(parse(['list']), ops)).toEqual([`${id}  http://127.0.0.1:9/hook  transaction.created  vaults v1`])
      expect(await runWebhooksCommand(parse(['deliveries', id]), ops)).toEqual(['No deliveries.'])
      await t.db.prisma.$transaction((tx) => emitEvents(tx, [txEvent(`cli-${via}`)]))
      const lines = await runWebhooksCommand(parse(['deliveries', id, 'pending']), ops)
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(new RegExp(`^${ISO}  transaction\\.created  v1  pending  0 attempt\\(s\\), last -  next ${ISO}  event ${UUID}$`))
      expect(await runWebhooksCommand(parse(['deliveries', id, 'dead']), ops)).toEqual(['No deliveries.'])

      expect(await runWebhooksCommand(parse(['remove', id]), ops)).toEqual([`Removed webhook endpoint ${id} with its deliveries.`])
      expect(await runWebhooksCommand(parse(['list']), ops)).toEqual(['No webhook endpoints.'])
      await expect(runWebhooksCommand(parse(['remove', id]), ops)).rejects.toThrow(`No webhook endpoint with id ${id}.`)
    })
  }

  it.runIf(testBackend === 'pglite')('is a command of the vaultgate CLI', async () => {
    const env = { DATA_DIR: await embeddedDataDir('vaultgate-webhooks-'), SEED_DEMO: 'false', WEBHOOK_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'warn' }
    const add = await runCli(['webhooks', 'add', 'http://127.0.0.1:9/hook', 'all'], env)
    expect(add.stderr).toBe('')
    expect(add.code).toBe(0)
    expect(add.stdout).toMatch(/^Added webhook endpoint \S+ for http:\/\/127\.0\.0\.1:9\/hook\n/)
    const list = await runCli(['webhooks', 'list'], env)
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(
      /^\S+ {2}http:\/\/127\.0\.0\.1:9\/hook {2}vault\.updated,transaction\.created,transaction\.status_changed,redeem\.completed {2}all vaults\n$/,
    )
    const wrong = await runCli(['webhooks', 'add', 'http://127.0.0.1:9/hook'], env)
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toMatch(/^vaultgate: webhooks add needs a URL and the event TYPES/)
  })
})
