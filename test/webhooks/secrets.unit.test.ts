import { describe, expect, it } from 'vitest'
import { Webhook } from 'standardwebhooks'
import { createSecretBox, generateSecret } from '../../src/webhooks/secrets.js'

const ENDPOINT = '6f1c1c1e-7f0a-4c1b-9d55-0d6f3c1a2b3c'
const OTHER = '0b7c7b6e-1111-4c1b-9d55-0d6f3c1a2b3c'

describe('webhook secrets', () => {
  it('are whsec_ + 32 random bytes, usable by the standardwebhooks package', () => {
    const secret = generateSecret()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32)
    expect(generateSecret()).not.toBe(secret)
    const wh = new Webhook(secret)
    const signature = wh.sign('evt', new Date(), '{}')
    expect(wh.verify('{}', { 'webhook-id': 'evt', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': signature })).toEqual({})
  })

  it('are sealed with the key and open only for the endpoint they were sealed for', () => {
    const box = createSecretBox([Buffer.alloc(32, 9)])
    const secret = generateSecret()
    const sealed = box.seal(secret, ENDPOINT)
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\./)
    expect(sealed).not.toContain(secret.slice(6, 20))
    expect(box.seal(secret, ENDPOINT)).not.toBe(sealed)
    expect(box.open(sealed, ENDPOINT)).toBe(secret)
    expect(() => box.open(sealed, OTHER)).toThrow('does not open with its key')
    const parts = sealed.split('.')
    parts[3] = Buffer.from(`x${Buffer.from(parts[3]!, 'base64url').toString('latin1').slice(1)}`, 'latin1').toString('base64url')
    expect(() => box.open(parts.join('.'), ENDPOINT)).toThrow('does not open with its key')
  })

  it('open after a rotation while the old key is listed, and name the missing key otherwise', () => {
    const oldKey = Buffer.alloc(32, 1)
    const newKey = Buffer.alloc(32, 2)
    const sealedOld = createSecretBox([oldKey]).seal('whsec_abc', ENDPOINT)
    expect(createSecretBox([newKey, oldKey]).open(sealedOld, ENDPOINT)).toBe('whsec_abc')
    expect(() => createSecretBox([newKey]).open(sealedOld, ENDPOINT)).toThrow(/sealed with a key \(id [0-9a-f]{8}\) that WEBHOOK_SECRET_KEY does not list/)
  })

  it('are stored as written without a key, and stay readable once a key is set', () => {
    const plain = createSecretBox()
    expect(plain.sealing).toBe(false)
    expect(plain.seal('whsec_abc', ENDPOINT)).toBe('plain.whsec_abc')
    expect(createSecretBox([Buffer.alloc(32, 5)]).open('plain.whsec_abc', ENDPOINT)).toBe('whsec_abc')
  })
})
