import { badRequest } from '../core/errors.js'

/**
 * The one EVM address rule (docs/spec/decisions.md §3): `0x` + 40 hex digits, accepted in any case, stored
 * and answered lowercase. No checksum (EIP-55) check: mixed case is accepted as written, since
 * wallets and explorers disagree about when to apply it. Used by the REST parameters, GraphQL
 * arguments, the X-Service-Wallet header, session-token claims, the allowlist, the importer, the
 * configuration (ALLOWLIST) and the CLI.
 */
export const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/

export const isEvmAddress = (value: unknown): value is string => typeof value === 'string' && EVM_ADDRESS.test(value)

/** The address in its stored form, or undefined when `value` is not an EVM address. */
export const normalizeAddress = (value: unknown): string | undefined => (isEvmAddress(value) ? value.toLowerCase() : undefined)

/** The address in its stored form; anything else is a `bad_request` naming `what`. */
export function parseAddress(input: string, what = 'address'): string {
  const address = normalizeAddress(input)
  if (address === undefined) throw badRequest(`${what} must be an EVM address: 0x followed by 40 hex digits.`)
  return address
}
