import { isIPv4, isIPv6 } from 'node:net'
import ipaddr from 'ipaddr.js'

// The one reading of a client's address (README "Under faults and abuse"), for every per-IP limit
// (src/http/middleware/rate-limit.ts clientIdOf) and for API keys' allowedCidrs (src/keys/cidr.ts):
// one address, however it is spelt, is one client.
//
// - IPv4 is four decimal parts 0-255 without leading zeros (node:net's strict rule): `192.0.2.055`
//   is refused, because `055` is 55 to some parsers and octal 45 to inet_aton; so are `127.1` and
//   `0x7f.0.0.1`. A `:port` after an IPv4 address is dropped.
// - IPv6 in any case and any zero compression, in brackets with or without a `:port`, with or
//   without a zone (`%eth0`, dropped), is written in its canonical text: lowercase, longest run of
//   zero groups compressed, no leading zeros, no dotted tail (the WHATWG URL serialiser's, which is
//   RFC 5952's for every address that embeds no IPv4).
// - An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a dual-stack socket reports for an IPv4
//   client) is that IPv4 address. The deprecated IPv4-compatible form `::a.b.c.d` is not: it is
//   the IPv6 address `::cb00:7128` whatever its spelling (ipaddr.js alone would read it as mapped).

export interface ClientAddress {
  family: 4 | 6
  /** The canonical text, e.g. `192.0.2.55` or `2001:db8::1`. */
  address: string
}

const BRACKETED = /^\[([^\]]+)\](?::\d{1,5})?$/
const IPV4_WITH_PORT = /^([\d.]+):\d{1,5}$/

/** The canonical form of an address as a client, proxy or socket may write it; undefined when it is none. */
export function canonicalAddress(text: string): ClientAddress | undefined {
  let value = text
  const bracketed = BRACKETED.exec(value)
  if (bracketed) value = bracketed[1]!
  else {
    const withPort = IPV4_WITH_PORT.exec(value)
    if (withPort) value = withPort[1]!
  }
  if (isIPv4(value)) return { family: 4, address: value }
  const zone = value.indexOf('%')
  if (zone > 0) value = value.slice(0, zone)
  if (!isIPv6(value)) return undefined
  const hex = canonicalIPv6(value)
  const parsed = ipaddr.IPv6.parse(hex)
  if (parsed.isIPv4MappedAddress()) return { family: 4, address: parsed.toIPv4Address().toString() }
  return { family: 6, address: hex }
}

/** The canonical text of an address node:net's isIPv6 accepts (no zone): hexadecimal groups only, `::ffff:c000:237` included. */
export function canonicalIPv6(value: string): string {
  // The URL parser only serialises it here (it accepts every address isIPv6 does).
  return new URL(`http://[${value}]/`).hostname.slice(1, -1)
}

/**
 * The identity a per-IP limit counts: the canonical IPv4 address, or the IPv6 network of
 * `ipv6Prefix` bits holding the address (`2001:db8::/64`: one site or subscriber usually holds a
 * whole /64, and picks any address in it at will). Text that is no address counts as one client,
 * `invalid` (a trusted proxy never writes such a thing; what it spells differently is not a new client).
 */
export function clientIdentity(text: string, ipv6Prefix: number): string {
  const parsed = canonicalAddress(text)
  if (!parsed) return 'invalid'
  if (parsed.family === 4 || ipv6Prefix >= 128) return parsed.address
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${parsed.address}/${ipv6Prefix}`).toString()}/${ipv6Prefix}`
}
