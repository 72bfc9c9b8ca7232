import { BlockList, isIP, isIPv6 } from 'node:net'
import ipaddr from 'ipaddr.js'
import { canonicalAddress, canonicalIPv6 } from '../core/client-address.js'
import { badRequest, quoted } from '../core/errors.js'

// IP allowlists of API keys (docs/spec/decisions.md §13). Addresses are read by the one client
// address parser (src/core/client-address.ts: dotted quads without leading zeros, IPv6 in any
// spelling), networks are computed by ipaddr.js on the canonical text and matched by node:net's
// BlockList. The two families are kept apart: an IPv4 client (or an IPv4-mapped IPv6 one,
// ::ffff:1.2.3.4, as a dual-stack socket reports it) is matched against the IPv4 networks only,
// and any other IPv6 client against the IPv6 networks only, so `::/0` means "every IPv6 address",
// not IPv4 too. The deprecated IPv4-compatible `::1.2.3.4` is the IPv6 address `::102:304`, in
// either spelling (ipaddr.js alone reads it as IPv4-mapped).

/** At most this many networks per key. */
export const MAX_ALLOWED_CIDRS = 30

const PREFIX = /^(0|[1-9]\d{0,2})$/

const bad = (value: string, why: string) => badRequest(`allowedCidrs: ${quoted(value.slice(0, 64))} ${why}`)

/**
 * One network in canonical form: the network address (host bits cleared) in its shortest text
 * (RFC 5952 for IPv6), then `/prefix`. A bare address is a single host (`/32`, `/128`), and an
 * IPv4-mapped IPv6 network of /96 or longer is written as the IPv4 network it is.
 */
export function canonicalCidr(value: string): string {
  const slash = value.indexOf('/')
  const address = slash === -1 ? value : value.slice(0, slash)
  const family = isIP(address)
  if (family === 0 || address.includes('%')) throw bad(value, 'is not an IPv4 or IPv6 network such as "203.0.113.0/24" or "2001:db8::/32".')
  const max = family === 4 ? 32 : 128
  const prefixText = slash === -1 ? String(max) : value.slice(slash + 1)
  if (!PREFIX.test(prefixText) || Number(prefixText) > max) throw bad(value, `has a prefix length outside 0-${max}.`)
  let prefix = Number(prefixText)
  let cidr = `${address}/${prefix}`
  if (family === 6) {
    cidr = `${canonicalIPv6(address)}/${prefix}`
    const mapped = canonicalAddress(address)!
    if (mapped.family === 4 && prefix >= 96) {
      prefix -= 96
      cidr = `${mapped.address}/${prefix}`
      return `${ipaddr.IPv4.networkAddressFromCIDR(cidr).toString()}/${prefix}`
    }
    return `${ipaddr.IPv6.networkAddressFromCIDR(cidr).toString()}/${prefix}`
  }
  return `${ipaddr.IPv4.networkAddressFromCIDR(cidr).toString()}/${prefix}`
}

/** Canonical networks, duplicates (after canonicalisation) dropped, order kept. */
export function canonicalCidrs(list: readonly string[]): string[] {
  return [...new Set(list.map(canonicalCidr))]
}

/** Whether a client address is inside one of a key's networks (built once per key state, checked per verification). */
export type CidrMatcher = (clientIp: string) => boolean

export function cidrMatcher(cidrs: readonly string[]): CidrMatcher {
  const v4 = new BlockList()
  const v6 = new BlockList()
  for (const cidr of cidrs) {
    const [address, prefix] = cidr.split('/') as [string, string]
    if (isIPv6(address)) v6.addSubnet(address, Number(prefix), 'ipv6')
    else v4.addSubnet(address, Number(prefix), 'ipv4')
  }
  return (clientIp) => {
    const client = canonicalAddress(clientIp)
    if (!client) return false
    return client.family === 4 ? v4.check(client.address, 'ipv4') : v6.check(client.address, 'ipv6')
  }
}
