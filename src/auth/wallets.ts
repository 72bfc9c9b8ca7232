import { AppError } from '../core/errors.js'
import { normalizeAddress } from '../wallets/address.js'
import { isJsonObject } from '../core/formats.js'

const evm = normalizeAddress

/** Privy puts `linked_accounts` in its identity token as a JSON string; other issuers as an array. */
function arrayClaim(value: unknown): unknown[] {
  if (Array.isArray(value)) return value
  if (typeof value === 'string') {
    try {
      const parsed: unknown = JSON.parse(value)
      return Array.isArray(parsed) ? parsed : []
    } catch {
      return []
    }
  }
  return []
}

/**
 * The EVM wallets a wallet-session token holds, lowercase and without duplicates, from the three
 * claim shapes of docs/spec/decisions.md §7:
 * - Dynamic: `verified_credentials[]` with `format: "blockchain"`, `chain: "eip155"`, `address`;
 * - Privy: `linked_accounts` (array or JSON string) with `type: "wallet"`, `chain_type: "ethereum"`, `address`;
 * - plain: `wallets`, an array of address strings or of objects with `address`.
 * Entries of other chains, or whose address is not an EVM address, are ignored.
 */
export function walletsFromClaims(payload: Record<string, unknown>): string[] {
  const found: (string | undefined)[] = []
  for (const c of arrayClaim(payload.verified_credentials)) {
    if (isJsonObject(c) && c.format === 'blockchain' && c.chain === 'eip155') found.push(evm(c.address))
  }
  for (const a of arrayClaim(payload.linked_accounts)) {
    if (isJsonObject(a) && a.type === 'wallet' && a.chain_type === 'ethereum') found.push(evm(a.address))
  }
  for (const w of arrayClaim(payload.wallets)) found.push(isJsonObject(w) ? evm(w.address) : evm(w))
  return [...new Set(found.filter((a): a is string => a !== undefined))]
}

/**
 * The wallet a request acts for (spec §5 and §7): the token's only wallet, or the one
 * `X-Service-Wallet` names. The header, when given, must name a wallet of the token even when
 * the token holds just one.
 */
export function selectWallet(wallets: string[], header: string | null | undefined): string {
  if (wallets.length === 0) throw new AppError('wallet_required', 'The session token holds no EVM wallet.')
  const named = header?.trim()
  if (named === undefined || named === '') {
    if (wallets.length === 1) return wallets[0]!
    throw new AppError('wallet_required', 'The session token holds several EVM wallets; name one in the X-Service-Wallet header.', { status: 400 })
  }
  const wallet = normalizeAddress(named)
  if (wallet === undefined) throw new AppError('bad_request', 'X-Service-Wallet must be an EVM address (0x followed by 40 hex digits).')
  if (!wallets.includes(wallet)) throw new AppError('wallet_not_connected', 'X-Service-Wallet names a wallet that the session token does not hold.')
  return wallet
}
