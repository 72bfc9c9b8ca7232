import { describe, expect, it } from 'vitest'
import { canonicalAddress, clientIdentity } from '../../src/core/client-address.js'

// src/core/client-address.ts: one client, however its address is spelt, is one identity for
// every per-IP limit.

describe('client identity', () => {
  it('maps the spellings of one address to one identity', () => {
    const ids = (spellings: string[], prefix = 128) => new Set(spellings.map((s) => clientIdentity(s, prefix)))
    expect(ids(['2001:DB8::1', '2001:db8:0::1', '2001:0db8:0000:0000:0000:0000:0000:0001', '[2001:db8::1]', '[2001:db8::1]:443', '2001:db8::1%eth0'])).toEqual(
      new Set(['2001:db8::1']),
    )
    expect(ids(['192.0.2.55', '::ffff:192.0.2.55', '::FFFF:C000:0237', '[::ffff:192.0.2.55]:80', '192.0.2.55:8080'])).toEqual(new Set(['192.0.2.55']))
    expect(ids(['::203.0.113.40', '::cb00:7128', '0:0:0:0:0:0:cb00:7128'])).toEqual(new Set(['::cb00:7128']))
  })

  it('refuses ambiguous IPv4 spellings (leading zeros, short and hexadecimal forms): they count as one client, never a new one each', () => {
    for (const text of ['192.0.2.055', '127.1', '0x7f.0.0.1', '1.2.3.256', 'garbage', '', ' 192.0.2.55']) {
      expect(canonicalAddress(text)).toBeUndefined()
      expect(clientIdentity(text, 64)).toBe('invalid')
    }
  })

  it('groups IPv6 clients by their network of the configured prefix; IPv4 clients stay one address each', () => {
    expect(clientIdentity('2001:db8:1:2:aaaa::1', 64)).toBe('2001:db8:1:2::/64')
    expect(clientIdentity('2001:db8:1:2:ffff:ffff:ffff:ffff', 64)).toBe('2001:db8:1:2::/64')
    expect(clientIdentity('2001:db8:1:3::1', 64)).toBe('2001:db8:1:3::/64')
    expect(clientIdentity('2001:db8:1:3::1', 48)).toBe('2001:db8:1::/48')
    expect(clientIdentity('2001:db8:1:3::1', 128)).toBe('2001:db8:1:3::1')
    expect(clientIdentity('::ffff:192.0.2.55', 64)).toBe('192.0.2.55')
    expect(clientIdentity('192.0.2.56', 64)).toBe('192.0.2.56')
  })
})
