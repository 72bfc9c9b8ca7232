import { badRequest } from '../core/errors.js'

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/

/**
 * A wallet address as the API stores and answers it (decisions.md §3): `0x` + 40 hex digits,
 * accepted in any case, returned lowercase. No checksum (EIP-55) check: mixed case is accepted
 * as written, since wallets and explorers disagree about when to apply it.
 */
export function parseAddress(input: string): string {
  if (!EVM_ADDRESS.test(input)) throw badRequest('address must be an EVM address: 0x followed by 40 hex digits.')
  return input.toLowerCase()
}
