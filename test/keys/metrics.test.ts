import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testBackend } from '../support/db.js'
import { createKeysTestApp, INTERNAL_TOKEN, manualClock, type KeysTestApp } from '../support/keys.js'

const WALLET = '0x00000000000000000000000000000000000000e5'

function metricValue(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`))
  return line ? Number(line.split(' ').pop()) : 0
}

describe(`API-key verification metrics (${testBackend})`, () => {
  let t: KeysTestApp
  const time = manualClock()
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: time.clock, allowlist: [WALLET] })
  })
  afterAll(() => t.close())

  it('counts verifications by result and key-cache lookups by hit or miss', async () => {
    const scrape = async () => (await t.request('/metrics')).text()
    const before = await scrape()
    const { body } = await t.create(WALLET)
    expect((await t.verify(body.data.apiKey)).body.data.active).toBe(true) // miss: loaded
    expect((await t.verify(body.data.apiKey)).body.data.active).toBe(true) // hit
    expect((await t.verify('not-a-key')).body.data.reason).toBe('unknown') // malformed: no lookup at all
    await t.revoke(WALLET) // drops this wallet's cached state
    expect((await t.verify(body.data.apiKey)).body.data.reason).toBe('revoked') // miss
    const after = await scrape()
    const delta = (name: string, labels: string) => metricValue(after, name, labels) - metricValue(before, name, labels)
    expect(delta('vaultgate_api_key_verifications_total', 'result="active"')).toBe(2)
    expect(delta('vaultgate_api_key_verifications_total', 'result="unknown"')).toBe(1)
    expect(delta('vaultgate_api_key_verifications_total', 'result="revoked"')).toBe(1)
    expect(delta('vaultgate_cache_lookups_total', 'cache="api_key",result="hit"')).toBe(1)
    expect(delta('vaultgate_cache_lookups_total', 'cache="api_key",result="miss"')).toBe(2)
  })

  it('counts refusals by client IP, and the batched usage writes', async () => {
    const scrape = async () => (await t.request('/metrics')).text()
    const before = await scrape()
    const { body } = await t.create(WALLET, { allowedCidrs: ['192.0.2.0/24'] })
    const verify = (clientIp: string) =>
      t.request('/internal/v1/apiKey/verify', {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: body.data.apiKey, clientIp }),
      })
    expect((await (await verify('198.51.100.1')).json()).data.reason).toBe('ip_not_allowed')
    expect((await (await verify('192.0.2.9')).json()).data.active).toBe(true)
    await t.app.keyUsage.flush()
    await t.app.keyUsage.flush() // nothing left: no write
    const after = await scrape()
    const delta = (name: string, labels: string) => metricValue(after, name, labels) - metricValue(before, name, labels)
    expect(delta('vaultgate_api_key_verifications_total', 'result="ip_not_allowed"')).toBe(1)
    expect(delta('vaultgate_api_key_usage_flushes_total', 'result="written"')).toBe(1)
  })
})
