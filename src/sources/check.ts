import { BaseError, type Transport } from 'viem'
import { erc7540ProbeAbi, ERC7540_ASYNC_REDEEM } from './abi.js'
import { loadSourcesFile, type SourceChain, type SourcesConfig, SourcesConfigError, type SourceVault } from './config.js'
import { snapshotOf, type VaultState } from './mapping.js'
import { ChainReader, type VaultFacts } from './reader.js'
import { describeRpcError, type RetryPolicy } from './rpc.js'

// `vaultgate sources check`: validates the sources file, then asks each chain and contract whether
// the follower could work with it. Reads only; writes nothing anywhere.

export interface Finding {
  level: 'error' | 'warning' | 'info'
  /** A JSON path into the file (`chains.mainnet`, `vaults[2]`), or `file`. */
  path: string
  message: string
  /** The node did not answer (or failed): asking again later may give another answer. */
  transient?: true
}

export interface CheckOptions {
  /** A check should answer quickly: by default two attempts per request. */
  retry?: RetryPolicy
  /** Injected in tests, per chain. */
  transport?: (chain: SourceChain) => Transport | undefined
}

const CHECK_RETRY: RetryPolicy = { attempts: 2, baseDelayMs: 200, maxDelayMs: 1000 }

/** Validates `file` and every chain and vault in it; `error` findings mean the follower would fail. */
export async function checkSources(file: string, options: CheckOptions = {}): Promise<Finding[]> {
  let config: SourcesConfig
  try {
    config = await loadSourcesFile(file)
  } catch (e) {
    if (!(e instanceof SourcesConfigError)) throw e
    return e.problems.map((p) => ({ level: 'error', path: p.path ?? 'file', message: p.message }))
  }
  const findings: Finding[][] = await Promise.all(
    Object.values(config.chains).map((chain) =>
      checkChain(
        new ChainReader({ chain, retry: options.retry ?? CHECK_RETRY, transport: options.transport?.(chain) }),
        config.vaults.map((v, i) => [v, i] as const).filter(([v]) => v.chain === chain.name),
      ),
    ),
  )
  return findings.flat()
}

/**
 * Checks one chain and its vaults (`[vault, index in the file]`) through `reader`: the chain id,
 * then each contract. The follower runs the same checks before it reads anything (src/sources/follower.ts).
 */
export async function checkChain(reader: ChainReader, vaults: readonly (readonly [SourceVault, number])[]): Promise<Finding[]> {
  const chain = reader.chain
  const path = `chains.${chain.name}`
  const out: Finding[] = []
  let head: bigint
  try {
    const id = await reader.client.getChainId()
    if (id !== chain.chain_id) {
      out.push({ level: 'error', path: `${path}.chain_id`, message: `is ${chain.chain_id}, but the node at rpc_url serves chain ${id}` })
      return out
    }
    head = await reader.headNumber()
  } catch (e) {
    out.push({ level: 'error', path: `${path}.rpc_url`, message: `the node does not answer: ${describeRpcError(e)}`, transient: true })
    for (const [, i] of vaults)
      out.push({ level: 'error', path: `vaults[${i}]`, message: `not checked: chain "${chain.name}" does not answer`, transient: true })
    return out
  }
  try {
    const multicall = await reader.multicallContract()
    if (multicall && chain.multicall3_address) {
      const code = await reader.client.getCode({ address: multicall.address })
      if (!code || code === '0x')
        out.push({ level: 'warning', path: `${path}.multicall3_address`, message: 'has no contract at the head; plain eth_calls will be used' })
    }
    out.push({
      level: 'info',
      path,
      message: `chain ${chain.chain_id}, head ${head}, ${multicall ? `Multicall3 at ${multicall.address}` : 'no Multicall3 (plain eth_calls)'}`,
    })
  } catch (e) {
    out.push({ level: 'warning', path, message: `could not look for Multicall3: ${describeRpcError(e)}` })
  }
  for (const [vault, i] of vaults) out.push(...(await checkVault(reader, vault, `vaults[${i}]`, head)))
  return out
}

async function checkVault(reader: ChainReader, vault: SourceVault, path: string, head: bigint): Promise<Finding[]> {
  const out: Finding[] = []
  const client = reader.client
  try {
    const code = await client.getCode({ address: vault.address, blockNumber: head })
    if (!code || code === '0x') return [{ level: 'error', path: `${path}.address`, message: `no contract at ${vault.address} on ${vault.chain}` }]
    if (BigInt(vault.from_block) > head)
      out.push({ level: 'warning', path: `${path}.from_block`, message: `is beyond the chain's head (${head}): nothing is read until then` })
    else {
      const then = await client.getCode({ address: vault.address, blockNumber: BigInt(vault.from_block) })
      if (!then || then === '0x')
        out.push({ level: 'warning', path: `${path}.from_block`, message: 'is before the contract was deployed: the blocks before it are read for nothing' })
    }
  } catch (e) {
    return [{ level: 'error', path, message: `not checked: ${describeRpcError(e)}`, transient: true }]
  }

  let facts: VaultFacts
  let state: VaultState | Error
  try {
    facts = await reader.vaultFacts(vault.address, head)
    state = (await reader.readStates([{ facts }], head)).get(facts.address)!
  } catch (e) {
    // The reader answers a call that reverts with an Error of its own; viem's errors are the node's.
    if (e instanceof BaseError) return [...out, { level: 'error', path, message: `not checked: ${describeRpcError(e)}`, transient: true }]
    return [...out, { level: 'error', path: `${path}.address`, message: `is not an ERC-4626 vault: ${e instanceof Error ? e.message : String(e)}` }]
  }
  if (state instanceof Error) return [...out, { level: 'error', path: `${path}.address`, message: `is not an ERC-4626 vault: ${state.message}` }]

  // ERC-7540: ERC-165 says so, or at least the request view answers (not every vault implements ERC-165).
  const supports = await client
    .readContract({ address: vault.address, abi: erc7540ProbeAbi, functionName: 'supportsInterface', args: [ERC7540_ASYNC_REDEEM], blockNumber: head })
    .catch(() => undefined)
  const answersPending = await client
    .readContract({
      address: vault.address,
      abi: erc7540ProbeAbi,
      functionName: 'pendingRedeemRequest',
      args: [0n, '0x0000000000000000000000000000000000000000'],
      blockNumber: head,
    })
    .then(
      () => true,
      () => false,
    )
  const isAsync = supports === true || answersPending
  if (vault.kind === 'erc7540' && !isAsync)
    out.push({
      level: 'error',
      path: `${path}.kind`,
      message: `is "erc7540", but the contract is not an ERC-7540 vault: supportsInterface(${ERC7540_ASYNC_REDEEM}) is not true and pendingRedeemRequest() does not answer`,
    })
  if (vault.kind === 'erc4626' && isAsync)
    out.push({
      level: 'warning',
      path: `${path}.kind`,
      message: 'is "erc4626", but the contract has ERC-7540 asynchronous redeems: its RedeemRequest events would be ignored',
    })

  const snap = snapshotOf(
    { id: vault.id, chainId: vault.chain_id, kind: vault.kind, assetDecimals: facts.assetDecimals, vaultDecimals: facts.vaultDecimals },
    state,
    { number: head, hash: '0x', timestamp: 0n },
  )
  out.push({
    level: 'info',
    path,
    message: `"${vault.id}": ${isAsync ? 'ERC-7540' : 'ERC-4626'} vault over asset ${facts.asset} (${facts.assetDecimals} decimals, shares ${facts.vaultDecimals}); at block ${head}: tvl ${snap.tvl}, share price ${snap.share_price}`,
  })
  return out
}
