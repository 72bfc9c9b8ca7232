import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { checkWebhookUrl, isPublicAddress, resolveTarget, type OutboundPolicy, type Resolver } from '../../src/webhooks/outbound.js'
import { sendWebhook } from '../../src/webhooks/send.js'
import { startReceiver, type Receiver } from './receiver.js'

// The outbound guard: no request to the gateway's own network unless the operator allows it, and
// the request goes to the address that was checked.

const guarded: OutboundPolicy = { requireHttps: false, allowPrivate: false }
const open: OutboundPolicy = { requireHttps: false, allowPrivate: true }
const production: OutboundPolicy = { requireHttps: true, allowPrivate: false }

/** DNS as a test wants it: names only it knows, answered without a DNS server. */
function fakeDns(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = []
  const resolve = async (host: string) => {
    calls.push(host)
    const answer = table[host]
    if (!answer) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
    return answer.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }))
  }
  return Object.assign(resolve, { calls })
}

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '169.254.0.1',
    '100.64.0.1',
    '100.127.255.254',
    '0.0.0.0',
    '0.1.2.3',
    '255.255.255.255',
    '224.0.0.1',
    '240.0.0.1',
    '192.0.2.10',
    '198.18.0.1',
    '198.51.100.1',
    '203.0.113.1',
    '192.0.0.8',
    '::',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:8.8.8.8',
    '::127.0.0.1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'febf::1',
    'fec0::1',
    'ff02::1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::1',
    '2001:db8::1',
    '2001::1',
    '2002:7f00:1::1',
    '100::1',
    'not-an-address',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false)
  })

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '100.128.0.1',
    '169.253.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '64:ff9b::8.8.8.8',
  ])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true)
  })
})

describe('checkWebhookUrl', () => {
  it.each([
    ['http://127.0.0.1/hook', '127.0.0.1 is not a public address.'],
    ['http://10.1.2.3/hook', '10.1.2.3 is not a public address.'],
    ['http://[::1]/hook', '::1 is not a public address.'],
    ['http://[::ffff:127.0.0.1]/hook', '::ffff:7f00:1 is not a public address.'],
    ['http://0x7f.1/hook', '127.0.0.1 is not a public address.'],
    ['http://2130706433/hook', '127.0.0.1 is not a public address.'],
    ['http://0.0.0.0:4000/hook', '0.0.0.0 is not a public address.'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is not a public address.'],
    ['http://localhost:4000/hook', 'localhost is a loopback name.'],
    ['http://api.localhost/hook', 'api.localhost is a loopback name.'],
    ['ftp://example.com/hook', 'The URL must use https (or http outside production).'],
    ['https://user:pass@example.com/hook', 'The URL must not carry credentials; the signature authenticates the gateway.'],
    ['https://example.com/hook#frag', 'The URL must not have a fragment (#…).'],
    ['example.com/hook', 'The URL is not an absolute URL.'],
  ])('refuses %s', (url, message) => {
    expect(() => checkWebhookUrl(url, guarded)).toThrow(message)
  })

  it('allows http outside production and only https in production', () => {
    expect(checkWebhookUrl('http://example.com/hook', guarded).href).toBe('http://example.com/hook')
    expect(() => checkWebhookUrl('http://example.com/hook', production)).toThrow('The URL must use https in production.')
    expect(checkWebhookUrl('https://example.com/hook?token=x', production).href).toBe('https://example.com/hook?token=x')
  })

  it('allows private and loopback hosts when WEBHOOK_ALLOW_PRIVATE=true', () => {
    for (const url of ['http://127.0.0.1:4000/hook', 'http://[::1]/hook', 'http://10.0.0.5/hook', 'http://localhost/hook']) {
      expect(checkWebhookUrl(url, open).href).toBe(url)
    }
  })
})

describe('resolveTarget', () => {
  it('refuses a name that resolves to loopback (the system resolver)', async () => {
    await expect(resolveTarget('http://localhost:4000/hook', guarded)).rejects.toThrow(
      /^localhost resolves to (127\.0\.0\.1|::1), which is not a public address\.$/,
    )
    await expect(resolveTarget('http://localhost.:4000/hook', guarded)).rejects.toThrow(/^localhost resolves to (127\.0\.0\.1|::1), which/)
    expect((await resolveTarget('http://localhost:4000/hook', open)).addresses.length).toBeGreaterThan(0)
  })

  it('checks every address of the answer, not just the first', async () => {
    const dns = fakeDns({
      'mixed.example': ['93.184.216.34', '10.0.0.7'],
      'six.example': ['2606:4700::1', 'fd00::7'],
      'public.example': ['93.184.216.34', '2606:4700::1'],
    })
    await expect(resolveTarget('https://mixed.example/hook', { ...guarded, resolve: dns })).rejects.toThrow(
      'mixed.example resolves to 10.0.0.7, which is not a public address.',
    )
    await expect(resolveTarget('https://six.example/hook', { ...guarded, resolve: dns })).rejects.toThrow(
      'six.example resolves to fd00::7, which is not a public address.',
    )
    expect((await resolveTarget('https://public.example/hook', { ...guarded, resolve: dns })).addresses).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1', family: 6 },
    ])
  })

  it('reports a name that does not resolve', async () => {
    await expect(resolveTarget('https://nowhere.example/hook', { ...guarded, resolve: fakeDns({}) })).rejects.toThrow(
      'nowhere.example does not resolve (ENOTFOUND).',
    )
  })
})

describe('sendWebhook', () => {
  let receiver: Receiver
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(() => receiver?.close())
  beforeEach(() => {
    receiver.requests.length = 0
  })

  const message = { id: 'evt-1', body: '{"type":"vault.updated"}', secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`, timestamp: new Date() }
  const send = (url: string, policy: OutboundPolicy, timeoutMs = 5000) => sendWebhook(url, message, { policy, timeoutMs })

  it('refuses loopback, private and IPv6 loopback targets without sending anything', async () => {
    const port = receiver.port
    expect(await send(`http://127.0.0.1:${port}/a`, guarded)).toEqual({
      ok: false,
      statusCode: null,
      error: 'refused: 127.0.0.1 is not a public address.',
      responseBody: null,
    })
    expect(await send(`http://10.0.0.1:${port}/a`, guarded)).toMatchObject({ ok: false, error: 'refused: 10.0.0.1 is not a public address.' })
    expect(await send(`http://[::1]:${port}/a`, guarded)).toMatchObject({ ok: false, error: 'refused: ::1 is not a public address.' })
    expect((await send(`http://localhost:${port}/a`, guarded)).error).toMatch(
      /^refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public address\.$/,
    )
    const dns = fakeDns({ 'rebind.example': ['127.0.0.1'] })
    expect(await send(`http://rebind.example:${port}/a`, { ...guarded, resolve: dns })).toMatchObject({
      ok: false,
      error: 'refused: rebind.example resolves to 127.0.0.1, which is not a public address.',
    })
    expect(receiver.requests).toHaveLength(0)
  })

  it('sends when private addresses are allowed', async () => {
    receiver.secrets.set('/a', message.secret)
    expect(await send(receiver.url('/a'), open)).toEqual({ ok: true, statusCode: 204, error: null, responseBody: null })
    expect(receiver.requests).toMatchObject([{ path: '/a', id: 'evt-1', verified: true }])
  })

  it('connects to the address it checked: DNS is asked once, and the socket uses that answer', async () => {
    // `hook.internal.test` exists only in this resolver; the system resolver could not reach it.
    const dns = fakeDns({ 'hook.internal.test': ['127.0.0.1'] })
    receiver.secrets.set('/pinned', message.secret)
    const result = await send(`http://hook.internal.test:${receiver.port}/pinned`, { ...open, resolve: dns })
    expect(result).toMatchObject({ ok: true, statusCode: 204 })
    expect(dns.calls).toEqual(['hook.internal.test'])
    expect(receiver.requests).toMatchObject([{ path: '/pinned', host: `hook.internal.test:${receiver.port}`, verified: true }])
  })

  it('counts DNS in the timeout', async () => {
    const never: Resolver = () => new Promise(() => {})
    expect(await send('https://slow-dns.example/hook', { ...guarded, resolve: never }, 200)).toMatchObject({ ok: false, error: 'no response within 0.2 s' })
  })

  it('reports a refused connection', async () => {
    const closed = await startReceiver()
    const url = closed.url('/gone')
    await closed.close()
    expect(await send(url, open)).toMatchObject({ ok: false, statusCode: null, error: 'connection refused' })
  })
})
