import type { Context as HonoContext } from 'hono'
import type { Config } from '../../config.js'
import { clientIdentity } from '../../core/client-address.js'
import { commaList } from '../../core/formats.js'

/** What identifies a client to the per-IP limits (TRUST_PROXY, RATE_LIMIT_IPV6_PREFIX). */
export type ClientIdentityConfig = Pick<Config, 'trustProxyHops' | 'ipv6Prefix'>

/**
 * The client's address as sent: the socket's peer, or, behind `hops` trusted proxies, the address
 * the outermost of them saw (counted from the right of X-Forwarded-For, since entries further left
 * are whatever the client chose to send). `env`: @hono/node-server's bindings (absent in process).
 */
function clientAddressOf(forwardedFor: string | null | undefined, env: unknown, hops: number): string | undefined {
  if (hops > 0) {
    const forwarded = commaList(forwardedFor)
    if (forwarded.length > 0) return forwarded[Math.max(0, forwarded.length - hops)]!
  }
  // In-process requests (tests, app.fetch without a server) have no socket.
  type Bindings = { incoming?: { socket?: { remoteAddress?: string } } }
  const outer = env as (Bindings & { server?: Bindings }) | undefined
  return (outer?.server ?? outer)?.incoming?.socket?.remoteAddress
}

/**
 * The identity every per-IP limit counts (the public rate limit, the wrong-token budgets, the
 * subscription streams per client): the client's address in canonical form, an IPv6 client's
 * network of RATE_LIMIT_IPV6_PREFIX bits (src/core/client-address.ts); `unknown` without a socket.
 */
export function clientIdOf(forwardedFor: string | null | undefined, env: unknown, who: ClientIdentityConfig): string {
  const address = clientAddressOf(forwardedFor, env, who.trustProxyHops)
  return address === undefined ? 'unknown' : clientIdentity(address, who.ipv6Prefix)
}

export function clientId(c: HonoContext, who: ClientIdentityConfig): string {
  return clientIdOf(c.req.header('x-forwarded-for'), c.env, who)
}
