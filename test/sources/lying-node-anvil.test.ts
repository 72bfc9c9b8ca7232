import type { Address } from 'viem'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createLogger, logger, setLogger } from '../../src/core/log.js'
import { registry } from '../../src/core/metrics.js'
import type { Database } from '../../src/db/client.js'
import { parseSourcesConfig, type SourcesConfig } from '../../src/sources/config.js'
import { startSourceFollower, type SourceFollower } from '../../src/sources/follower.js'
import { sourcesStatus, type SourceStatus } from '../../src/sources/status.js'
import { WEBHOOK_EVENT_TYPES } from '../../src/webhooks/events.js'
import { anvilSkip, anvilSuiteTitle, CHAIN_ID, startAnvil, TestChain, type Anvil } from '../support/anvil.js'
import { testBackend, testDatabase } from '../support/db.js'
import { fakeHash, RpcRewritingProxy } from '../support/rpc-proxy.js'
import { serviceFor } from '../webhooks/setup.js'
import { valueWhen } from '../support/eventually.js'

// A node that lies (issue 25, rows 1 and 2), against a real anvil behind a JSON-RPC proxy that
// rewrites block hashes, parent hashes and times, with the follower writing into this backend's
// database: a node's word alone never erases served data. A node that contradicts itself about a
// recorded block pauses the chain (degraded) and deletes nothing; one on a wholly other chain
// (every journaled block replaced) stops it for an operator and deletes nothing; blocks dated ten
// years ahead are refused, never stored. Each time the node comes right, following resumes by
// itself, and the webhook events already written are not written again under new ids.

const skip = anvilSkip()
const FAST_RETRY = { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 }
const usd = (x: number) => BigInt(Math.round(x * 1e6))
const TEN_YEARS_S = 10n * 365n * 86_400n

describe.skipIf(skip)(anvilSuiteTitle(`chain source behind a lying node (anvil, ${testBackend})`, skip), () => {
  let anvil: Anvil
  let chain: TestChain
  let proxy: RpcRewritingProxy
  let db: Database
  let follower: SourceFollower | undefined
  let vault: Address
  let alice: Address, bob: Address, carol: Address, dave: Address
  /** The follower's log lines. */
  const lines: { level: string; msg: string; reason?: string }[] = []
  /** The lines of a pause's episode: its beginning and its end. */
  const episode = (reason: string) => lines.filter((l) => l.reason === reason).map((l) => l.level)

  function sources(): SourcesConfig {
    return parseSourcesConfig({
      chains: {
        anvil: { chain_id: CHAIN_ID, rpc_url: proxy.url, confirmations: 2, poll_interval_ms: 100, requests_per_second: 10_000, max_block_range: 500 },
      },
      vaults: [
        {
          id: 'usd-4626',
          name: 'Test USD 4626',
          symbol: 'vgUSD',
          base_asset: 'tUSD',
          status: 'active',
          perf_fee_bps: 1000,
          mgmt_fee_bps: 50,
          api_endpoint: 'https://vaults.example/api',
          description: 'Test USD 4626 on anvil',
          chain: 'anvil',
          address: vault,
          kind: 'erc4626',
          from_block: 2,
          base_asset_price_usd: '1',
        },
      ],
    })
  }
  const status = async (): Promise<SourceStatus> => (await sourcesStatus(db.prisma, sources()))[0]!
  const confirmedHead = async () => (await chain.blockNumber()) - 2n
  const syncedTo = (block: bigint, ms?: number) =>
    valueWhen(`synced to ${block}, ok`, status, (s) => s.syncedBlock !== null && BigInt(s.syncedBlock) >= block && s.status === 'ok', ms)
  const paused = async (reason: string) =>
    (await registry.getSingleMetric('vaultgate_source_paused')!.get()).values.find((v) => v.labels.chain === 'anvil' && v.labels.reason === reason)?.value ?? 0
  const reorgs = async () => (await registry.getSingleMetric('vaultgate_source_reorgs_total')!.get()).values.find((v) => v.labels.chain === 'anvil')?.value ?? 0

  /** What is served: every transaction and snapshot, as stored. */
  const records = async () => ({
    transactions: await db.prisma.$queryRawUnsafe<{ id: string; timestamp: Date }[]>(`SELECT id, timestamp FROM transactions ORDER BY id`),
    snapshots: await db.prisma.$queryRawUnsafe<{ as_of: Date; tvl: string }[]>(
      `SELECT as_of, trim_scale(tvl)::text AS tvl FROM vault_snapshots ORDER BY as_of`,
    ),
  })
  /** Every webhook event written: its id (the `webhook-id`), type and the transaction or vault it is about. */
  const events = () =>
    db.prisma.$queryRawUnsafe<{ id: string; type: string; subject: string }[]>(
      `SELECT id::text, type, coalesce(payload->>'id', payload->>'vault_id') AS subject FROM webhook_events ORDER BY created_at, id`,
    )

  beforeAll(async () => {
    anvil = await startAnvil()
    chain = new TestChain(anvil.url, anvil.accounts)
    ;[, alice, bob, carol, dave] = anvil.accounts as [Address, Address, Address, Address, Address]
    ;({ vault } = await chain.deployAll()) // blocks 1-3
    await chain.installMulticall3()
    await chain.fund(alice, vault, usd(1500)) // 4, 5
    await chain.deposit(alice, vault, usd(1500)) // 6
    await chain.mine(3) // 7-9
    proxy = new RpcRewritingProxy(anvil.url)
    await proxy.start()
    db = await testDatabase()
    await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/hooks', event_types: [...WEBHOOK_EVENT_TYPES] })
    setLogger(createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) }))
    follower = startSourceFollower({ sources: sources(), db: db.prisma, retry: FAST_RETRY })
    await syncedTo(await confirmedHead())
  })

  // A test that failed half-way leaves no lie behind for the next.
  afterEach(() => {
    proxy.rewrite = undefined
  })

  const previousLogger = logger
  afterAll(async () => {
    await follower?.stop()
    setLogger(previousLogger)
    await db?.close()
    await proxy?.stop()
    await anvil?.stop()
  })

  it('a node that gives recorded blocks other hashes its next blocks do not build on: degraded, 0 deleted, then resumed with the same events', async () => {
    const before = await records()
    const eventsBefore = await events()
    const synced = (await status()).syncedBlock!
    expect(before.transactions).toHaveLength(1)
    expect(eventsBefore.map((e) => e.type)).toContain('transaction.created')

    // Every block gets another hash; each block's parentHash stays the true one.
    proxy.rewrite = (b) => ({ ...b, hash: fakeHash(BigInt(b.number)) })
    await chain.fund(bob, vault, usd(250)) // new blocks: the follower reads again, and meets the lie
    await chain.deposit(bob, vault, usd(250))
    await chain.mine(2)
    const degraded = await valueWhen('degraded', status, (s) => s.status === 'degraded')
    expect(degraded.lastError).toMatch(
      /^the node contradicts itself: block \d+ is 0x[0-9a-f]{64} \(recorded: 0x[0-9a-f]{64}\), but block \d+ names 0x[0-9a-f]{64} as its parent; following paused, nothing deleted, asking again$/,
    )
    expect(await paused('node_contradicts')).toBe(1)
    // It keeps asking, and keeps deleting nothing.
    const rewritten = proxy.rewritten
    await valueWhen(
      'asked again',
      async () => proxy.rewritten,
      (n) => n >= rewritten + 3,
      100_000,
    )
    expect(await records()).toEqual(before)
    expect((await status()).syncedBlock).toBe(synced)
    expect(await events()).toEqual(eventsBefore)
    expect(await reorgs()).toBe(0)

    // The node comes right: following resumes by itself, with Bob's deposit, and nothing else new.
    proxy.rewrite = undefined
    // Its polls back off while it fails (up to a minute between two): waits for the next one.
    await syncedTo(await confirmedHead(), 100_000)
    expect(await paused('node_contradicts')).toBe(0)
    const after = await records()
    expect(after.transactions).toHaveLength(2)
    expect(after.transactions).toEqual(expect.arrayContaining(before.transactions))
    expect(after.snapshots.slice(0, before.snapshots.length)).toEqual(before.snapshots)
    const eventsAfter = await events()
    expect(eventsAfter.slice(0, eventsBefore.length)).toEqual(eventsBefore)
    const bobsDeposit = after.transactions.find((t) => !before.transactions.some((b) => b.id === t.id))!.id
    expect(
      eventsAfter
        .slice(eventsBefore.length)
        .map((e) => [e.type, e.subject])
        .sort(),
    ).toEqual([
      ['transaction.created', bobsDeposit],
      ['vault.updated', 'usd-4626'],
    ])
    expect((await status()).lastError).toBeNull()
    // One line when the pause began, one when it ended: not one per poll.
    expect(episode('node_contradicts')).toEqual(['warn', 'info'])
  }, 240_000)

  it('blocks dated ten years ahead: refused (degraded) and never stored; recorded with their real time once the node is right', async () => {
    const before = await records()
    const synced = BigInt((await status()).syncedBlock!)
    const from = (await chain.blockNumber()) + 1n
    proxy.rewrite = (b) => (BigInt(b.number) >= from ? { ...b, timestamp: `0x${(BigInt(b.timestamp) + TEN_YEARS_S).toString(16)}` } : b)
    await chain.fund(carol, vault, usd(70)) // from, from + 1
    await chain.deposit(carol, vault, usd(70)) // from + 2
    await chain.mine(2)
    const degraded = await valueWhen('degraded', status, (s) => s.status === 'degraded')
    expect(degraded.lastError).toMatch(
      /^block \d+ is dated \d+ s ahead of this gateway's clock \(more than CHAIN_MAX_CLOCK_SKEW_MS\); not recorded, asking again$/,
    )
    expect(await paused('block_time_ahead')).toBe(1)
    const rewritten = proxy.rewritten
    await valueWhen(
      'asked again',
      async () => proxy.rewritten,
      (n) => n >= rewritten + 3,
      100_000,
    )
    expect(await records()).toEqual(before)
    // Nothing from the first block dated ahead on was recorded, and the synced block did not go back.
    const stuck = BigInt((await status()).syncedBlock!)
    expect(stuck).toBeGreaterThanOrEqual(synced)
    expect(stuck).toBeLessThan(from)

    proxy.rewrite = undefined
    // Its polls back off while it fails (up to a minute between two): waits for the next one.
    await syncedTo(await confirmedHead(), 100_000)
    expect(await paused('block_time_ahead')).toBe(0)
    const after = await records()
    expect(after.transactions).toHaveLength(3)
    const now = Date.now()
    for (const t of after.transactions) expect(t.timestamp.getTime()).toBeLessThan(now)
    for (const s of after.snapshots) expect(s.as_of.getTime()).toBeLessThan(now)
    expect(episode('block_time_ahead')).toEqual(['warn', 'info'])
  }, 240_000)

  it('a node on another chain (every journaled block replaced, consistently): stopped for an operator, 0 deleted; followed again once the node agrees', async () => {
    // More blocks than the journal keeps (1,024), then a deposit: its range is journaled, the first ones are not.
    await chain.mine(1100)
    await chain.fund(dave, vault, usd(30))
    await chain.deposit(dave, vault, usd(30))
    await chain.mine(2)
    // Catching up 1,100 blocks takes a while on a loaded machine.
    await syncedTo(await confirmedHead(), 100_000)
    const before = await records()
    const eventsBefore = await events()
    const synced = (await status()).syncedBlock!
    expect(before.transactions).toHaveLength(4)

    // A consistent other chain: every hash replaced, and every parentHash the replaced parent's.
    proxy.rewrite = (b) => ({ ...b, hash: fakeHash(BigInt(b.number)), parentHash: BigInt(b.number) === 0n ? b.parentHash : fakeHash(BigInt(b.number) - 1n) })
    await chain.mine(1)
    const stopped = await valueWhen('stopped', status, (s) => s.status === 'stopped')
    expect(stopped.lastError).toContain('a reorg deeper than the journal')
    expect(stopped.lastError).toContain('following stopped, nothing deleted. An operator decides')
    expect(await paused('deep_reorg')).toBe(1)
    const rewritten = proxy.rewritten
    await valueWhen(
      'asked again',
      async () => proxy.rewritten,
      (n) => n >= rewritten + 3,
      100_000,
    )
    expect(await records()).toEqual(before)
    expect((await status()).syncedBlock).toBe(synced)
    expect(await events()).toEqual(eventsBefore)
    expect(await reorgs()).toBe(0)

    proxy.rewrite = undefined
    await chain.mine(1)
    // Its polls back off while it fails (up to a minute between two): waits for the next one.
    await syncedTo(await confirmedHead(), 100_000)
    expect(await paused('deep_reorg')).toBe(0)
    expect(await records()).toMatchObject({ transactions: before.transactions })
    expect((await events()).slice(0, eventsBefore.length)).toEqual(eventsBefore)
    expect(episode('deep_reorg')).toEqual(['error', 'info'])
  }, 240_000)
})
