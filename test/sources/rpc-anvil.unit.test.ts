import { HttpRequestError, type Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { collectRange, ReorgDuringReadError, type FollowedVault } from '../../src/sources/collect.js'
import type { SourceChain } from '../../src/sources/config.js'
import { LogFetcher } from '../../src/sources/logs.js'
import { ChainReader, watchConfirmedHead } from '../../src/sources/reader.js'
import type { RpcFailure } from '../../src/sources/rpc.js'
import { anvilSkip, anvilSuiteTitle, CHAIN_ID, nodeTransport, rpcError, startAnvil, TestChain, type Anvil } from '../support/anvil.js'

// The reader's behaviour when the node misbehaves, against a real anvil behind transports that
// refuse, fail or pass requests on as a provider would; and reorgs made with evm_snapshot/evm_revert.

const skip = anvilSkip()

const chainConfig = (url: string): SourceChain => ({
  name: 'anvil',
  chain_id: CHAIN_ID,
  rpc_url: url,
  confirmations: 2,
  poll_interval_ms: 20,
  multicall3_address: null,
  requests_per_second: 10_000,
  max_block_range: 2000,
})

const FAST_RETRY = { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 }

describe.skipIf(skip)(anvilSuiteTitle('chain reader against a misbehaving node (anvil)', skip), () => {
  let anvil: Anvil
  let chain: TestChain
  let vault: Address
  let alice: Address, bob: Address
  const eventBlocks: bigint[] = []

  beforeAll(async () => {
    anvil = await startAnvil()
    chain = new TestChain(anvil.url, anvil.accounts)
    ;[, alice, bob] = anvil.accounts as [Address, Address, Address]
    ;({ vault } = await chain.deployAll())
    await chain.fund(alice, vault, 10_000_000n)
    // Deposits spread over ~100 blocks, so log ranges matter.
    for (let i = 0; i < 5; i++) {
      eventBlocks.push((await chain.deposit(alice, vault, 1_000_000n)).blockNumber)
      await chain.mine(17 + i)
    }
    await chain.mine(80)
  })

  afterAll(async () => {
    await anvil?.stop()
  })

  it('halves a refused eth_getLogs range, learns the limit, grows back slowly, and finds every log', async () => {
    const asked: { span: number; refused: boolean }[] = []
    const transport = nodeTransport(anvil.url, async (req, forward) => {
      if (req.method === 'eth_getLogs') {
        const [filter] = req.params as [{ fromBlock: string; toBlock: string }]
        const span = Number(BigInt(filter.toBlock) - BigInt(filter.fromBlock)) + 1
        asked.push({ span, refused: span > 10 })
        // Infura's words and code for a range it will not serve.
        if (span > 10) throw rpcError(-32005, 'query returned more than 10000 results. Try with this block range [0x1, 0xa].')
      }
      return forward()
    })
    const failures: RpcFailure[] = []
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport, onFailure: (f) => failures.push(f), retry: FAST_RETRY })
    const refusals: string[] = []
    const fetcher = new LogFetcher(reader.client, { maxSpan: 64, onRefusal: ({ from, to }) => refusals.push(`${from}-${to}`) })
    const head = await chain.blockNumber()
    const events = await fetcher.fetch([vault], 1n, head)

    expect(events.map((e) => [e.type, e.blockNumber])).toEqual(eventBlocks.map((b) => ['deposit', b]))
    // The same logs as one unrefused request returns.
    const plain = new ChainReader({ chain: chainConfig(anvil.url) })
    expect(events).toEqual(await new LogFetcher(plain.client, { maxSpan: 10_000 }).fetch([vault], 1n, head))

    // 64, 32, 16 refused; 8 passes three times and grows to 12 (refused: the limit is below 12),
    // 6 ×3, 9 ×3, 11 refused (below 11, then), 5 ×3, 8 ×3, and the limit itself, 10, from there on
    // (the last request is the rest of the range).
    expect(asked.map((a) => (a.refused ? `${a.span}!` : `${a.span}`))).toEqual([
      '64!',
      '32!',
      '16!',
      '8',
      '8',
      '8',
      '12!',
      '6',
      '6',
      '6',
      '9',
      '9',
      '9',
      '11!',
      '5',
      '5',
      '5',
      '8',
      '8',
      '8',
      '10',
      '10',
      '10',
      '10',
      '10',
      '10',
      '10',
      '7',
    ])
    expect(refusals).toHaveLength(5)
    // A refusal is not retried: each refused range reached the node once, and was reported once.
    expect(failures.map((f) => [f.method, f.willRetry])).toEqual(Array(5).fill(['eth_getLogs', false]))
    expect(failures[0]!.message).toBe(
      'Request exceeds defined limit.: query returned more than 10000 results. Try with this block range [0x1, 0xa]. (code -32005)',
    )
  })

  it('retries a failing request with backoff and reports each failure without the URL', async () => {
    let failuresLeft = 2
    const secretUrl = `${anvil.url}/v3/SECRET-API-KEY`
    const transport = nodeTransport(anvil.url, async (req, forward) => {
      if (req.method === 'eth_blockNumber' && failuresLeft-- > 0)
        throw new HttpRequestError({ url: secretUrl, status: 503, body: { method: req.method }, details: 'Service Unavailable' })
      return forward()
    })
    const failures: RpcFailure[] = []
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport, onFailure: (f) => failures.push(f), retry: FAST_RETRY })
    expect(await reader.headNumber()).toBe(await chain.blockNumber())
    expect(failures).toEqual([
      { chain: 'anvil', method: 'eth_blockNumber', attempt: 1, willRetry: true, message: 'HTTP 503: HTTP request failed.: Service Unavailable' },
      { chain: 'anvil', method: 'eth_blockNumber', attempt: 2, willRetry: true, message: 'HTTP 503: HTTP request failed.: Service Unavailable' },
    ])
    expect(JSON.stringify(failures)).not.toContain('SECRET')
    expect(reader.lastError).toBeNull()
  })

  it('gives up after the last attempt, keeps the error for the status, and never retries a revert', async () => {
    const seen: string[] = []
    const transport = nodeTransport(anvil.url, async (req, forward) => {
      seen.push(req.method)
      if (req.method === 'eth_getBlockByNumber') throw rpcError(-32603, 'upstream went away')
      return forward()
    })
    const failures: RpcFailure[] = []
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport, onFailure: (f) => failures.push(f), retry: FAST_RETRY })
    await expect(reader.block(1n)).rejects.toThrow('upstream went away')
    expect(failures.map((f) => [f.attempt, f.willRetry])).toEqual([
      [1, true],
      [2, true],
      [3, false],
    ])
    expect(reader.lastError?.message).toBe('eth_getBlockByNumber: An internal error was received.: upstream went away (code -32603)')

    // A call that reverts gets the same answer every time: sent once, not retried. (The asset is an
    // ERC-20 without asset(): the call reverts.)
    seen.length = 0
    failures.length = 0
    const notAVault = await reader.vaultFacts(chain.deployment.asset, await reader.headNumber()).catch((e: Error) => e)
    expect(notAVault).toBeInstanceOf(Error)
    expect((notAVault as Error).message).toMatch(/^vault 0x[0-9a-f]{40}: asset\(\) failed: asset\(\): /)
    expect(seen).toEqual(['eth_blockNumber', 'eth_call', 'eth_call'])
    expect(failures.map((f) => [f.method, f.attempt, f.willRetry])).toEqual([['eth_call', 1, false]])
  })

  it('hands a head over again when its handling failed', async () => {
    const reader = new ChainReader({ chain: chainConfig(anvil.url) })
    const calls: bigint[] = []
    const errors: string[] = []
    let reached: () => void
    const done = new Promise<void>((resolve) => (reached = resolve))
    const watch = watchConfirmedHead(reader, {
      onHead: (confirmed) => {
        calls.push(confirmed)
        if (calls.length === 1) throw new Error('database unavailable')
        reached()
      },
      onError: (e) => errors.push((e as Error).message),
    })
    await done
    await watch.stop()
    const confirmed = (await chain.blockNumber()) - 2n
    expect(calls).toEqual([confirmed, confirmed])
    expect(errors).toEqual(['database unavailable'])
  })

  it('polls the confirmed head through failures and reports each one', async () => {
    let failuresLeft = 3
    const transport = nodeTransport(anvil.url, async (req, forward) => {
      if (req.method === 'eth_blockNumber' && failuresLeft-- > 0) throw rpcError(-32603, 'node restarting')
      return forward()
    })
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport, retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 } })
    const errors: string[] = []
    const heads: bigint[] = []
    const head = await chain.blockNumber()
    let reached: () => void
    const done = new Promise<void>((resolve) => (reached = resolve))
    const watch = watchConfirmedHead(reader, {
      onHead: async (confirmed) => {
        heads.push(confirmed)
        if (heads.length === 1) await chain.mine(3)
        else reached()
      },
      onError: (e) => errors.push((e as Error).message.split('\n')[0]!),
    })
    await done
    await watch.stop()
    expect(errors).toEqual(Array(3).fill('An internal error was received.'))
    expect(heads).toEqual([head - 2n, head + 1n])
  })

  it('tells whether a recorded block is still canonical after a reorg (evm_snapshot / evm_revert)', async () => {
    const reader = new ChainReader({ chain: chainConfig(anvil.url) })
    const facts = await reader.vaultFacts(vault, await reader.headNumber())
    const followed: FollowedVault[] = [{ id: 'v', address: vault, kind: 'erc4626', snapshotIntervalMs: 3_600_000, facts }]
    const fetcher = new LogFetcher(reader.client, { maxSpan: 100 })

    const base = await chain.blockNumber()
    const snapshot = await chain.snapshot()
    await chain.fund(bob, vault, 2_000_000n)
    const bobDeposit = await chain.deposit(bob, vault, 2_000_000n)
    await chain.mine(2)
    const recorded = await reader.block(bobDeposit.blockNumber)
    const before = await collectRange(reader, fetcher, { vaults: followed, from: base + 1n, to: recorded.number, previous: null, progress: new Map() })
    expect(before.transactions.map((t) => [t.address, t.amount])).toEqual([[bob, '2']])
    expect(await reader.isCanonical(recorded)).toBe(true)

    await chain.revert(snapshot)
    // Rolled back below the recorded block: the node has no block there, it cannot say yet.
    expect(await reader.isCanonical(recorded)).toBeNull()
    // A different history at the same heights.
    await chain.fund(alice, vault, 3_000_000n)
    const aliceDeposit = await chain.deposit(alice, vault, 3_000_000n)
    await chain.mine(2)
    expect(aliceDeposit.blockNumber).toBe(bobDeposit.blockNumber)
    const now = await reader.block(recorded.number)
    expect(now.hash).not.toBe(recorded.hash)
    expect(await reader.isCanonical(recorded)).toBe(false)
    expect(await reader.isCanonical(now)).toBe(true)
    const after = await collectRange(reader, fetcher, { vaults: followed, from: base + 1n, to: recorded.number, previous: null, progress: new Map() })
    expect(after.transactions.map((t) => [t.address, t.amount])).toEqual([[alice, '3']])
  })

  it('notices a reorg that happens while a range is read, and records nothing of it', async () => {
    const facts = await new ChainReader({ chain: chainConfig(anvil.url) }).vaultFacts(vault, await chain.blockNumber())
    const followed: FollowedVault[] = [{ id: 'v', address: vault, kind: 'erc4626', snapshotIntervalMs: 3_600_000, facts }]
    const base = await chain.blockNumber()
    const snapshot = await chain.snapshot()
    await chain.fund(bob, vault, 4_000_000n)
    const bobDeposit = await chain.deposit(bob, vault, 4_000_000n)
    await chain.mine(2)
    let reorged = false
    // Between the logs and the headers, the node switches to another history at the same heights.
    const transport = nodeTransport(anvil.url, async (req, forward) => {
      if (req.method === 'eth_getBlockByNumber' && !reorged) {
        reorged = true
        await chain.revert(snapshot)
        await chain.fund(alice, vault, 5_000_000n)
        await chain.deposit(alice, vault, 5_000_000n)
        await chain.mine(2)
      }
      return forward()
    })
    const reader = new ChainReader({ chain: chainConfig(anvil.url), transport })
    const read = collectRange(reader, new LogFetcher(reader.client, { maxSpan: 100 }), {
      vaults: followed,
      from: base + 1n,
      to: bobDeposit.blockNumber,
      previous: null,
      progress: new Map(),
    })
    await expect(read).rejects.toThrow(new ReorgDuringReadError(bobDeposit.blockNumber))
    expect(reorged).toBe(true)
  })
})
