import { describe, expect, it } from 'vitest'
import { selectWallet, walletsFromClaims } from '../../src/auth/wallets.js'
import { AppError } from '../../src/core/errors.js'
import { parseInput } from '../../src/core/input.js'
import { base58, DEFAULT_KEY_PREFIX, digestOf, generateRawKey, looksLikeRawKey } from '../../src/keys/format.js'
import { CreateApiKeyInput, newKeySettings } from '../../src/keys/inputs.js'
import { cidrMatcher } from '../../src/keys/cidr.js'
import { judge } from '../../src/keys/verifier.js'

const A = '0x00000000000000000000000000000000000000aa'
const B = '0x00000000000000000000000000000000000000bb'
const codeOf = (fn: () => unknown) => {
  try {
    fn()
    return undefined
  } catch (e) {
    return e instanceof AppError ? [e.status, e.code] : e
  }
}

describe('raw key format', () => {
  it('is prefix, "_", 44 base58 digits of 32 random bytes; distinct every time', () => {
    const keys = Array.from({ length: 200 }, () => generateRawKey('my_bot'))
    for (const k of keys) {
      expect(k).toMatch(/^my_bot_[1-9A-HJ-NP-Za-km-z]{44}$/)
      expect(looksLikeRawKey(k)).toBe(true)
    }
    expect(new Set(keys).size).toBe(200)
  })

  it('encodes 32 bytes at a fixed width, zeros and all', () => {
    expect(base58(new Uint8Array(32), 44)).toBe('1'.repeat(44))
    expect(base58(new Uint8Array(32).fill(255), 44)).toBe('JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFG')
    expect(base58(Uint8Array.of(0, 0, 1), 5)).toBe('11112')
  })

  it('digests the whole raw key with SHA-256', () => {
    expect(digestOf('a')).toBe('ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb')
  })

  it('validates keyPrefix against spec rule 1, defaulting to vaultgate', () => {
    const prefixOf = (body: object) => newKeySettings(parseInput(CreateApiKeyInput, body)).keyPrefix
    expect(prefixOf({})).toBe(DEFAULT_KEY_PREFIX)
    expect(DEFAULT_KEY_PREFIX).toBe('vaultgate')
    for (const ok of ['a', 'A-b_c', '9', 'x'.repeat(32)]) expect(prefixOf({ keyPrefix: ok })).toBe(ok)
    for (const bad of ['', '_a', '-a', 'x'.repeat(33), 'a b', 'a/b', 'é']) expect(codeOf(() => prefixOf({ keyPrefix: bad }))).toEqual([400, 'bad_request'])
  })
})

describe('wallets in a session token', () => {
  it('reads Dynamic, Privy (array or JSON string) and plain claims, lowercased and deduplicated', () => {
    expect(
      walletsFromClaims({
        verified_credentials: [
          { format: 'blockchain', chain: 'eip155', address: A.toUpperCase().replace('0X', '0x') },
          { format: 'blockchain', chain: 'solana', address: 'So1' },
          { format: 'email', chain: 'eip155', address: B },
        ],
        linked_accounts: JSON.stringify([
          { type: 'wallet', chain_type: 'ethereum', address: B },
          { type: 'wallet', chain_type: 'solana', address: A },
        ]),
        wallets: [A, { address: B }, 'not-an-address', 7, null],
      }),
    ).toEqual([A, B])
    expect(walletsFromClaims({ linked_accounts: [{ type: 'wallet', chain_type: 'ethereum', address: B }] })).toEqual([B])
    expect(walletsFromClaims({ linked_accounts: '{broken', wallets: 'x', verified_credentials: {} })).toEqual([])
    expect(walletsFromClaims({ wallets: [`${A}0`, '0xzz'] })).toEqual([])
  })

  it('selects the wallet as spec §7 says', () => {
    expect(selectWallet([A], undefined)).toBe(A)
    expect(selectWallet([A], ' ')).toBe(A)
    expect(selectWallet([A, B], B.toUpperCase().replace('0X', '0x'))).toBe(B)
    expect(codeOf(() => selectWallet([], undefined))).toEqual([403, 'wallet_required'])
    expect(codeOf(() => selectWallet([], A))).toEqual([403, 'wallet_required'])
    expect(codeOf(() => selectWallet([A, B], undefined))).toEqual([400, 'wallet_required'])
    expect(codeOf(() => selectWallet([A, B], 'nope'))).toEqual([400, 'bad_request'])
    expect(codeOf(() => selectWallet([A], B))).toEqual([403, 'wallet_not_connected'])
  })
})

describe('verdicts', () => {
  const state = { id: 'k', wallet: A, expiresAtMs: 1000, revokedAtMs: null, revokeReason: null, allowlisted: true, cidrs: null }
  it('reports why a key is inactive, revocation first, a client outside its networks last', () => {
    expect(judge(null, 0)).toBe('unknown')
    expect(judge(state, 999)).toBeNull()
    expect(judge(state, 1000)).toBe('expired')
    expect(judge({ ...state, allowlisted: false }, 0)).toBe('not_whitelisted')
    expect(judge({ ...state, allowlisted: false }, 1000)).toBe('expired')
    for (const [why, reason] of [
      ['user', 'revoked'],
      ['replaced', 'revoked'],
      ['expired', 'expired'],
      ['allowlist_removed', 'not_whitelisted'],
    ]) {
      expect(judge({ ...state, revokedAtMs: 5, revokeReason: why! }, 0)).toBe(reason)
    }
    const bounded = { ...state, cidrs: cidrMatcher(['10.0.0.0/8']) }
    expect(judge(bounded, 0, '10.1.2.3')).toBeNull()
    expect(judge(bounded, 0, '11.1.2.3')).toBe('ip_not_allowed')
    expect(judge(bounded, 0)).toBe('ip_not_allowed')
    // Every other reason comes first: the IP is only asked of a key that is otherwise good.
    expect(judge({ ...bounded, revokedAtMs: 5, revokeReason: 'user' }, 0, '11.1.2.3')).toBe('revoked')
    expect(judge(bounded, 1000, '11.1.2.3')).toBe('expired')
    expect(judge({ ...bounded, allowlisted: false }, 0)).toBe('not_whitelisted')
  })
})
