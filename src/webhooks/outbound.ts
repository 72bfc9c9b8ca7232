import { lookup as dnsLookup } from 'node:dns/promises'
import { BlockList, isIP, type LookupFunction } from 'node:net'

// Outbound safety for webhook URLs (decisions.md §11, issue 17). An operator-supplied URL must not
// turn the gateway into a proxy into its own network: the host must resolve to public addresses
// only, and the request goes to exactly the addresses that were checked (the socket's lookup is
// pinned to them), so a DNS answer that changes between the check and the connect (rebinding)
// cannot swap in an internal address. Every address of the answer is checked, not just the first.

export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>

export interface OutboundPolicy {
  /** Only `https` URLs (NODE_ENV=production). */
  requireHttps: boolean
  /** WEBHOOK_ALLOW_PRIVATE=true: any address, loopback and private networks included. */
  allowPrivate: boolean
  /** DNS resolution; the system resolver (all addresses) unless given. */
  resolve?: Resolver
}

/** A URL or address the policy refuses; the message says why, for the operator. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused'
}

// IANA special-purpose ranges that are not globally reachable, plus multicast and reserved space.
const V4_NON_PUBLIC: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 itself
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
]

const V6_NON_PUBLIC: ReadonlyArray<readonly [string, number]> = [
  ['64:ff9b:1::', 48], // local-use NAT64
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, benchmarking, …)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: embeds an IPv4 address we would not see
  ['3fff::', 20], // documentation
]

// IPv6 is public only inside global unicast space (which leaves out ::, ::1, the IPv4-mapped and
// -compatible forms, unique-local fc00::/7, link-local fe80::/10, site-local, multicast), or as a
// NAT64 address (64:ff9b::/96) whose embedded IPv4 address is public itself.
const blocked = new BlockList()
const globalV6 = new BlockList()
for (const [net, bits] of V4_NON_PUBLIC) {
  blocked.addSubnet(net, bits, 'ipv4')
  blocked.addSubnet(`64:ff9b::${net}`, 96 + bits, 'ipv6')
}
for (const [net, bits] of V6_NON_PUBLIC) blocked.addSubnet(net, bits, 'ipv6')
globalV6.addSubnet('2000::', 3, 'ipv6')
globalV6.addSubnet('64:ff9b::', 96, 'ipv6')

/** True when `address` (an IP literal) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return !blocked.check(address, 'ipv4')
  if (family === 6) return globalV6.check(address, 'ipv6') && !blocked.check(address, 'ipv6')
  return false
}

const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))

const MAX_URL_LENGTH = 2048

/**
 * The checks that need no network: a well-formed absolute http(s) URL (https only when required),
 * without credentials or fragment, and not an IP literal or (unless `names` is false) a
 * `localhost` name outside the policy. Returns the parsed URL.
 */
export function checkWebhookUrl(input: string, policy: Pick<OutboundPolicy, 'requireHttps' | 'allowPrivate'>, { names = true } = {}): URL {
  if (input.length > MAX_URL_LENGTH) throw new OutboundRefused(`The URL is longer than ${MAX_URL_LENGTH} characters.`)
  let url: URL
  try {
    url = new URL(input)
  } catch {
    throw new OutboundRefused('The URL is not an absolute URL.')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundRefused('The URL must use https (or http outside production).')
  if (policy.requireHttps && url.protocol !== 'https:') throw new OutboundRefused('The URL must use https in production.')
  if (url.username || url.password) throw new OutboundRefused('The URL must not carry credentials; the signature authenticates the gateway.')
  if (url.hash) throw new OutboundRefused('The URL must not have a fragment (#…).')
  if (!policy.allowPrivate) {
    const host = bareHost(url)
    if (isIP(host) && !isPublicAddress(host)) throw new OutboundRefused(`${host} is not a public address.`)
    if (names && (host === 'localhost' || host.endsWith('.localhost'))) throw new OutboundRefused(`${host} is a loopback name.`)
  }
  return url
}

// Brackets off IPv6 literals; a trailing dot (the root, `localhost.`) names the same host.
const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '')

export interface OutboundTarget {
  url: URL
  /** The addresses the request may connect to (checked unless private addresses are allowed). */
  addresses: ResolvedAddress[]
  /** For http.request: answers with exactly `addresses`, never asking DNS again. */
  lookup: LookupFunction
}

/** Checks the URL, resolves its host and checks every address it resolves to. */
export async function resolveTarget(input: string, policy: OutboundPolicy): Promise<OutboundTarget> {
  // Names are judged by what they resolve to (localhost included): the addresses are what counts.
  const url = checkWebhookUrl(input, policy, { names: false })
  const host = bareHost(url)
  let addresses: ResolvedAddress[]
  const literal = isIP(host)
  if (literal) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }]
  } else {
    try {
      addresses = await (policy.resolve ?? systemResolver)(host)
    } catch (e) {
      throw new OutboundRefused(`${host} does not resolve (${(e as NodeJS.ErrnoException).code ?? 'DNS error'}).`)
    }
    if (addresses.length === 0) throw new OutboundRefused(`${host} does not resolve.`)
  }
  if (!policy.allowPrivate) {
    const bad = addresses.find((a) => !isPublicAddress(a.address))
    if (bad) throw new OutboundRefused(literal ? `${host} is not a public address.` : `${host} resolves to ${bad.address}, which is not a public address.`)
  }
  return { url, addresses, lookup: pinnedLookup(addresses) }
}

function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const want = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0
    const list = want ? addresses.filter((a) => a.family === want) : addresses
    if (list.length === 0) {
      const e: NodeJS.ErrnoException = new Error(`no IPv${want} address`)
      e.code = 'ENOTFOUND'
      callback(e, '', 0)
    } else if (options.all) {
      callback(null, list)
    } else {
      callback(null, list[0]!.address, list[0]!.family)
    }
  }
}
