import { describe, expect, it } from 'vitest'
import { parseInput } from '../../src/core/input.js'
import { canonicalCidr, cidrMatcher, canonicalCidrs } from '../../src/keys/cidr.js'
import { VerifyApiKeyInput } from '../../src/keys/inputs.js'

const parseClientIp = (clientIp: unknown) => parseInput(VerifyApiKeyInput, { apiKey: 'k', clientIp }).clientIp

// src/keys/cidr.ts: what the stored form of a network is, and which client addresses it admits.

describe('allowedCidrs', () => {
  it('stores the canonical network: host bits cleared, shortest IPv6 text, a bare address as one host, IPv4-mapped networks as IPv4', () => {
    expect(
      [
        '10.1.2.3/8',
        '10.0.0.0/8',
        '0.0.0.0/0',
        '1.2.3.4/0',
        '192.0.2.55',
        '192.0.2.55/32',
        'FE80:0:0:0:0:0:0:1/10',
        '2001:db8::1',
        '::/0',
        '2001:db8::ff/128',
        '::ffff:10.1.2.3/104',
        '::ffff:192.0.2.1',
        '::ffff:0:0/95',
      ].map(canonicalCidr),
    ).toEqual([
      '10.0.0.0/8',
      '10.0.0.0/8',
      '0.0.0.0/0',
      '0.0.0.0/0',
      '192.0.2.55/32',
      '192.0.2.55/32',
      'fe80::/10',
      '2001:db8::1/128',
      '::/0',
      '2001:db8::ff/128',
      '10.0.0.0/8',
      '192.0.2.1/32',
      '::fffe:0:0/95',
    ])
  })

  it('drops duplicates after canonicalisation and keeps the order', () => {
    expect(canonicalCidrs(['10.9.9.9/8', '2001:db8::/32', '10.0.0.0/8', '2001:DB8::1/32'])).toEqual(['10.0.0.0/8', '2001:db8::/32'])
    expect(canonicalCidrs([])).toEqual([])
  })

  it('matches each family on its own, IPv4-mapped clients as IPv4, /0 /32 /128 at their edges', () => {
    const m = cidrMatcher(['0.0.0.0/0'])
    expect(['0.0.0.0', '255.255.255.255', '::ffff:8.8.8.8', '::', '::1', 'ffff::'].map(m)).toEqual([true, true, true, false, false, false])
    const v6 = cidrMatcher(['::/0'])
    expect(['0.0.0.0', '8.8.8.8', '::ffff:8.8.8.8', '::', '2001:db8::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'].map(v6)).toEqual([
      false,
      false,
      false,
      true,
      true,
      true,
    ])
    const host = cidrMatcher(['192.0.2.1/32', '2001:db8::1/128'])
    expect(['192.0.2.1', '192.0.2.0', '192.0.2.2', '::ffff:192.0.2.1', '2001:db8::1', '2001:db8::', '2001:db8::2', '2001:0db8:0000::0001'].map(host)).toEqual([
      true,
      false,
      false,
      true,
      true,
      false,
      false,
      true,
    ])
    const edges = cidrMatcher(['10.0.0.0/31', '2001:db8::/127'])
    expect(['9.255.255.255', '10.0.0.0', '10.0.0.1', '10.0.0.2', '2001:db8::', '2001:db8::1', '2001:db8::2'].map(edges)).toEqual([
      false,
      true,
      true,
      false,
      true,
      true,
      false,
    ])
  })

  it('reads clientIp strictly, dropping an IPv6 zone index', () => {
    expect(parseClientIp('fe80::1%eth0')).toBe('fe80::1')
    expect(parseClientIp(undefined)).toBeUndefined()
    for (const bad of ['1.2.3.04', '1.2.3', '::g', '1.2.3.4/32', ' 1.2.3.4', '%eth0'])
      expect(() => parseClientIp(bad)).toThrow('clientIp must be an IPv4 or IPv6 address.')
  })

  it('judges an address the same whatever its spelling: the IPv4-compatible ::203.0.113.40 is the IPv6 ::cb00:7128, not IPv4', () => {
    const v4 = cidrMatcher(['203.0.113.0/24'])
    expect(['::203.0.113.40', '::cb00:7128', '0:0:0:0:0:0:CB00:7128'].map(v4)).toEqual([false, false, false])
    // The IPv4-mapped spellings are the IPv4 client, hexadecimal or dotted.
    expect(['203.0.113.40', '::ffff:203.0.113.40', '::FFFF:cb00:7128', '0:0:0:0:0:ffff:cb00:7128'].map(v4)).toEqual([true, true, true, true])
    const v6 = cidrMatcher(['::cb00:7100/120'])
    expect(['::203.0.113.40', '::cb00:7128', '203.0.113.40'].map(v6)).toEqual([true, true, false])
    // Stored in the same canonical form, whichever spelling created it.
    expect(['::203.0.113.0/120', '::cb00:7100/120'].map(canonicalCidr)).toEqual(['::cb00:7100/120', '::cb00:7100/120'])
  })

  it('reads clientIp in its canonical form: case, zero compression, brackets and ports, IPv4-mapped', () => {
    expect(['2001:DB8::1', '2001:db8:0::1', '[2001:db8::1]:443', '::ffff:192.0.2.55', '192.0.2.55:8080', '::203.0.113.40'].map(parseClientIp)).toEqual([
      '2001:db8::1',
      '2001:db8::1',
      '2001:db8::1',
      '192.0.2.55',
      '192.0.2.55',
      '::cb00:7128',
    ])
  })
})
