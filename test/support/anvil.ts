import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import {
  createPublicClient,
  custom,
  createTestClient,
  createWalletClient,
  http,
  type Abi,
  type Address,
  type Hex,
  type PublicClient,
  type TestClient,
  type TransactionReceipt,
  type Transport,
} from 'viem'
import { packageRoot } from '../../src/core/paths.js'

// A real anvil (Foundry's local EVM node) from the npm package @foundry-rs/anvil-linux-amd64, and
// helpers to deploy the test contracts and act as several accounts. The npm registry here serves
// only the linux x64 binary: elsewhere the suites skip with the reason, except under CI, where a
// missing binary fails them.

export const ANVIL_BIN = path.join(packageRoot, 'node_modules', '@foundry-rs', 'anvil-linux-amd64', 'bin', 'anvil')

/** Why anvil suites cannot run here, or undefined when they can. Throws under CI when the binary is missing. */
export function anvilSkipReason({
  platform = `${process.platform}-${process.arch}`,
  bin = ANVIL_BIN,
  ci = process.env.CI,
}: {
  platform?: string
  bin?: string
  ci?: string
} = {}): string | undefined {
  if (platform !== 'linux-x64') return `anvil suites need linux x64 (the npm package @foundry-rs/anvil-linux-amd64); this is ${platform}`
  if (existsSync(bin)) return undefined
  const reason = `anvil binary missing at ${path.relative(packageRoot, bin)}: run npm ci`
  if (ci) throw new Error(`${reason} (CI must run the anvil suites)`)
  return reason
}

/**
 * For a suite file: why its anvil suites skip, or undefined when they run. The reason is also written
 * to stderr once per file, since the default reporter lists a skipped file without its suite titles.
 */
export function anvilSkip(): string | undefined {
  const reason = anvilSkipReason()
  if (reason) console.warn(`anvil suites skipped: ${reason}`)
  return reason
}

/** A suite title that carries the skip reason, so a skipped run says why. */
export function anvilSuiteTitle(title: string, reason = anvilSkipReason()): string {
  return reason ? `${title} [skipped: ${reason}]` : title
}

export const CHAIN_ID = 31337
/** Genesis at 2026-01-01T00:00:00Z; each block 12 s after the previous one (see startAnvil). */
export const GENESIS_TIME = 1_767_225_600
export const BLOCK_TIME = 12

export interface Anvil {
  url: string
  port: number
  /** The node's unlocked accounts (it signs for them), lowercase. */
  accounts: Address[]
  child: ChildProcess
  stop(): Promise<void>
}

/**
 * Starts anvil on a free port (anvil picks it: `--port 0`) with a fixed genesis time, and resolves
 * once it answers JSON-RPC. Block times are deterministic: `anvil_setBlockTimestampInterval` makes
 * every block BLOCK_TIME seconds after the previous one. With `realTime` (scripts/chain-demo.ts),
 * blocks carry the wall clock's time instead; `port` is the demo's `--anvil-port`.
 */
export async function startAnvil(timeoutMs = 20_000, { realTime = false, port: wanted = 0 }: { realTime?: boolean; port?: number } = {}): Promise<Anvil> {
  const timing = realTime ? [] : ['--timestamp', String(GENESIS_TIME)]
  const child = spawn(ANVIL_BIN, ['--host', '127.0.0.1', '--port', String(wanted), ...timing, '--chain-id', String(CHAIN_ID), '--accounts', '6'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`anvil did not start in ${timeoutMs} ms:\n${output}`))
    }, timeoutMs)
    const onData = (d: Buffer) => {
      output += d
      const m = /Listening on 127\.0\.0\.1:(\d+)/.exec(output)
      if (m) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`anvil exited with ${code} before listening:\n${output}`))
    })
  })
  // Keep draining its output so a chatty node never blocks on a full pipe.
  child.stdout!.resume()
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      })
      if (res.ok) break
    } catch {
      // not answering yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`anvil did not answer at ${url} in ${timeoutMs} ms`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  if (!realTime) await rpc(url, 'anvil_setBlockTimestampInterval', [BLOCK_TIME])
  const accounts = ((await rpc(url, 'eth_accounts', [])) as string[]).map((a) => a.toLowerCase() as Address)
  return {
    url,
    port,
    accounts,
    child,
    stop: async () => {
      if (child.exitCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    },
  }
}

/**
 * A transport to the node that hands each request to `intercept`, which may pass it on (`forward`),
 * or refuse it as a provider would. Built with viem's custom(), so a thrown `rpcError` reaches the
 * client as the JSON-RPC error of that code, like a provider's.
 */
export function nodeTransport(
  url: string,
  intercept: (request: { method: string; params?: unknown }, forward: () => Promise<unknown>) => Promise<unknown>,
): Transport {
  const inner = http(url, { retryCount: 0 })({})
  const request = inner.request as (args: { method: string; params?: unknown }) => Promise<unknown>
  return custom({ request: (args: { method: string; params?: unknown }) => intercept(args, () => request(args)) }, { retryCount: 0 })
}

/** A JSON-RPC error as a provider returns it. */
export const rpcError = (code: number, message: string) => Object.assign(new Error(message), { code })

/** Counts the requests that reach the node, per method. */
export function countingTransport(url: string): { transport: Transport; counts: Map<string, number>; total(): number; reset(): void } {
  const counts = new Map<string, number>()
  return {
    transport: nodeTransport(url, (req, forward) => {
      counts.set(req.method, (counts.get(req.method) ?? 0) + 1)
      return forward()
    }),
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    reset: () => counts.clear(),
  }
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await res.json()) as { result?: unknown; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result
}

interface Artifact {
  contractName: string
  abi: Abi
  bytecode: Hex
  deployedBytecode: Hex
}

const artifactsDir = path.join(packageRoot, 'test', 'sources', 'contracts', 'artifacts')
export const artifact = (name: 'TestAsset' | 'TestVault' | 'AsyncRedeemVault' | 'Multicall3Subset'): Artifact =>
  JSON.parse(readFileSync(path.join(artifactsDir, `${name}.json`), 'utf8')) as Artifact

export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11'

export interface Deployment {
  asset: Address
  vault: Address
  asyncVault: Address
  /** Deploys everything and fulfils the async vault's requests: the first account. */
  manager: Address
}

/**
 * A test chain with the contracts and the actions of the scenarios. Every transaction is mined
 * at once (anvil's automine) in its own block; each action returns its receipt.
 */
export class TestChain {
  readonly public: PublicClient
  readonly test: TestClient
  private readonly assetAbi = artifact('TestAsset').abi
  private readonly vaultAbi = artifact('AsyncRedeemVault').abi
  deployment!: Deployment

  constructor(
    readonly url: string,
    readonly accounts: readonly Address[],
    transport: Transport = http(url),
  ) {
    this.public = createPublicClient({ transport, cacheTime: 0 }) as PublicClient
    this.test = createTestClient({ mode: 'anvil', transport }) as unknown as TestClient
  }

  private wallet(account: Address) {
    return createWalletClient({ account, transport: http(this.url), chain: undefined })
  }

  private async send(account: Address, address: Address, abi: Abi, functionName: string, args: readonly unknown[]): Promise<TransactionReceipt> {
    const hash = await this.wallet(account).writeContract({ address, abi, functionName, args, chain: null } as never)
    const receipt = await this.public.waitForTransactionReceipt({ hash, pollingInterval: 10 })
    if (receipt.status !== 'success') throw new Error(`${functionName} reverted`)
    return receipt
  }

  private async deploy(name: 'TestAsset' | 'TestVault' | 'AsyncRedeemVault', args: readonly unknown[] = []): Promise<Address> {
    const a = artifact(name)
    const hash = await this.wallet(this.accounts[0]!).deployContract({ abi: a.abi, bytecode: a.bytecode, args, chain: null } as never)
    const receipt = await this.public.waitForTransactionReceipt({ hash, pollingInterval: 10 })
    return receipt.contractAddress!.toLowerCase() as Address
  }

  /** Deploys the asset, the ERC-4626 vault and the ERC-7540 vault (three blocks). */
  async deployAll(): Promise<Deployment> {
    const asset = await this.deploy('TestAsset')
    const vault = await this.deploy('TestVault', [asset])
    const asyncVault = await this.deploy('AsyncRedeemVault', [asset])
    this.deployment = { asset, vault, asyncVault, manager: this.accounts[0]! }
    return this.deployment
  }

  /** Puts Multicall3 (its aggregate3) at the canonical address. */
  async installMulticall3(): Promise<void> {
    await this.test.setCode({ address: MULTICALL3_ADDRESS, bytecode: artifact('Multicall3Subset').deployedBytecode })
  }

  /** Mints `assets` to `account` and approves `vault` (two blocks). */
  async fund(account: Address, vault: Address, assets: bigint): Promise<void> {
    await this.send(account, this.deployment.asset, this.assetAbi, 'mint', [account, assets])
    await this.send(account, this.deployment.asset, this.assetAbi, 'approve', [vault, assets])
  }

  deposit(account: Address, vault: Address, assets: bigint, receiver: Address = account) {
    return this.send(account, vault, this.vaultAbi, 'deposit', [assets, receiver])
  }

  /** ERC-4626 withdraw of `assets` from `owner`'s shares, sent by `sender` (owner, or a spender it approved). */
  withdraw(owner: Address, vault: Address, assets: bigint, { sender = owner, receiver = sender }: { sender?: Address; receiver?: Address } = {}) {
    return this.send(sender, vault, this.vaultAbi, 'withdraw', [assets, receiver, owner])
  }

  /** Lets `spender` move `shares` of `owner`'s vault shares. */
  approveShares(owner: Address, vault: Address, spender: Address, shares: bigint) {
    return this.send(owner, vault, this.vaultAbi, 'approve', [spender, shares])
  }

  redeem(owner: Address, vault: Address, shares: bigint, receiver: Address = owner) {
    return this.send(owner, vault, this.vaultAbi, 'redeem', [shares, receiver, owner])
  }

  /** Yield without an event: assets sent straight to the vault. */
  donate(vault: Address, assets: bigint) {
    return this.send(this.accounts[0]!, this.deployment.asset, this.assetAbi, 'mint', [vault, assets])
  }

  requestRedeem(owner: Address, shares: bigint, controller: Address = owner) {
    return this.send(owner, this.deployment.asyncVault, this.vaultAbi, 'requestRedeem', [shares, controller, owner])
  }

  fulfill(controller: Address, shares: bigint) {
    return this.send(this.deployment.manager, this.deployment.asyncVault, this.vaultAbi, 'fulfillRedeem', [controller, shares])
  }

  /** Claims `shares` of the controller's fulfilled request (ERC-7540 redeem). */
  claim(controller: Address, shares: bigint, receiver: Address = controller) {
    return this.send(controller, this.deployment.asyncVault, this.vaultAbi, 'redeem', [shares, receiver, controller])
  }

  async shares(vault: Address, owner: Address): Promise<bigint> {
    return (await this.public.readContract({ address: vault, abi: this.vaultAbi, functionName: 'balanceOf', args: [owner] })) as bigint
  }

  async mine(blocks: number): Promise<void> {
    await this.test.mine({ blocks, interval: BLOCK_TIME })
  }

  async blockNumber(): Promise<bigint> {
    return this.public.getBlockNumber({ cacheTime: 0 })
  }

  snapshot(): Promise<Hex> {
    return this.test.snapshot()
  }

  async revert(id: Hex): Promise<void> {
    await this.test.revert({ id })
  }
}
