import { getAddress } from 'viem'
import { badRequest } from '../core/errors.js'
import { parseAddress } from '../wallets/address.js'

// A vault by its chain and contract (docs/spec/decisions.md §14): how a chain id is read, and the
// vault's CAIP-10 account id.

/** A CAIP-2 reference is at most 32 characters; an eip155 one is the decimal chain id. */
const DECIMAL_CHAIN_ID = /^[1-9][0-9]{0,31}$/
const CAIP2 = /^eip155:([1-9][0-9]{0,31})$/

/** `8453` or `eip155:8453` as the decimal chain id vaults store; anything else is a `bad_request` naming `what`. */
export function parseChainId(text: string, what = 'chain'): string {
  if (DECIMAL_CHAIN_ID.test(text)) return text
  const caip2 = CAIP2.exec(text)
  if (caip2) return caip2[1]!
  throw badRequest(`${what} must be a chain id: decimal (8453) or CAIP-2 (eip155:8453).`)
}

/** A contract address as looked up: 0x + 40 hex digits in any case (compared lowercase). */
export const parseContractAddress = (text: string, what = 'address') => parseAddress(text, what)

/**
 * `eip155:<chain_id>:<EIP-55 address>` (CAIP-10), or null when the chain id is not a decimal
 * integer or the contract address is not an EVM address (the import takes any text for both).
 */
export function caip10(chainId: string | null, contractAddress: string): string | null {
  if (chainId === null || !/^[0-9]+$/.test(chainId)) return null
  if (!/^0x[0-9a-fA-F]{40}$/.test(contractAddress)) return null
  return `eip155:${BigInt(chainId).toString()}:${getAddress(contractAddress.toLowerCase())}`
}
