import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminApiOps, parseEventTypes, runWebhooksCommand, serviceOps, webhookServiceFor } from '../../src/webhooks/cli.js'
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
  it('reads event types as comma-separated names or all, and names an unknown one', () => {
    expect(parseEventTypes('all')).toEqual([
      'vault.updated',
      'transaction.created',
      'transaction.status_changed',
      'redeem.claimable',
      'redeem.completed',
      'transaction.removed',
    ])
    expect(parseEventTypes('vault.updated, redeem.completed')).toEqual(['vault.updated', 'redeem.completed'])
    expect(() => parseEventTypes('vault.updated,vault.exploded')).toThrow(
      'Unknown event type vault.exploded; the types are vault.updated, transaction.created, transaction.status_changed, redeem.claimable, redeem.completed, transaction.removed (or all).',
    )
    expect(() => parseEventTypes(',')).toThrow(/^No event type; the types are/)
  })

  for (const via of ['the database', 'the admin API'] as const) {
    it(`adds, lists, shows deliveries and removes through ${via}`, async () => {
      const ops = via === 'the database' ? serviceOps(webhookServiceFor(t.config, t.db.prisma)) : adminApiOps(adminCall)
      const added = await runWebhooksCommand({ action: 'add', url: 'http://127.0.0.1:9/hook', eventTypes: ['transaction.created'], vaultIds: ['v1'] }, ops)
      expect(added).toHaveLength(3)
      expect(added[0]).toMatch(new RegExp(`^Added webhook endpoint (${UUID}) for http://127\\.0\\.0\\.1:9/hook$`))
      expect(added[1]).toBe('  events transaction.created; vaults v1')
      expect(added[2]).toMatch(/^ {2}signing secret \(shown only now; give it to the receiver\): whsec_[A-Za-z0-9+/]{43}=$/)
      const id = /endpoint (\S+) for/.exec(added[0]!)![1]!

      expect(await runWebhooksCommand({ action: 'list' }, ops)).toEqual([`${id}  http://127.0.0.1:9/hook  transaction.created  vaults v1`])
      expect(await runWebhooksCommand({ action: 'deliveries', id }, ops)).toEqual(['No deliveries.'])
      await t.db.prisma.$transaction((tx) => emitEvents(tx, [txEvent(`cli-${via}`)]))
      const lines = await runWebhooksCommand({ action: 'deliveries', id, status: 'pending' }, ops)
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(new RegExp(`^${ISO}  transaction\\.created  v1  pending  0 attempt\\(s\\), last -  next ${ISO}  event ${UUID}$`))
      expect(await runWebhooksCommand({ action: 'deliveries', id, status: 'dead' }, ops)).toEqual(['No deliveries.'])

      expect(await runWebhooksCommand({ action: 'remove', id }, ops)).toEqual([`Removed webhook endpoint ${id} with its deliveries.`])
      expect(await runWebhooksCommand({ action: 'list' }, ops)).toEqual(['No webhook endpoints.'])
      await expect(runWebhooksCommand({ action: 'remove', id }, ops)).rejects.toThrow(`No webhook endpoint with id ${id}.`)
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
      /^\S+ {2}http:\/\/127\.0\.0\.1:9\/hook {2}vault\.updated,transaction\.created,transaction\.status_changed,redeem\.claimable,redeem\.completed,transaction\.removed {2}all vaults\n$/,
    )
    const wrong = await runCli(['webhooks', 'add', 'http://127.0.0.1:9/hook', 'vault.exploded'], env)
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toMatch(/^vaultgate: command-argument value 'vault.exploded' is invalid for argument 'types'\. Unknown event type vault\.exploded/)
  })
})
