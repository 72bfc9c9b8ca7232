import { toEventSelector, type Address, type TransactionReceipt } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { registry } from '../../src/core/metrics.js'
import type { Database } from '../../src/db/client.js'
import { watchDataChanges } from '../../src/importer/changes.js'
import type { ImportTransaction } from '../../src/importer/document.js'
import { parseSourcesConfig, type SourcesConfig } from '../../src/sources/config.js'
import { startSourceFollower, type SourceFollower } from '../../src/sources/follower.js'
import type { VaultSnapshot } from '../../src/sources/mapping.js'
import { sourcesStatus, type SourceStatus } from '../../src/sources/status.js'
import { anvilSkip, anvilSuiteTitle, BLOCK_TIME, CHAIN_ID, GENESIS_TIME, nodeTransport, rpcError, startAnvil, TestChain, type Anvil } from '../support/anvil.js'
import { testBackend, testDatabase } from '../support/db.js'
import { serviceFor } from '../webhooks/setup.js'
import { valueWhen } from '../support/eventually.js'
import { answered } from '../support/bodies.js'

// The chain source end to end, on this backend: a real anvil with real vault contracts and
// transactions from several accounts, the follower writing through the importer into the
// database, and the gateway's REST and GraphQL answers read from it. The scenario is the one of
// test/sources/follow-anvil.unit.test.ts, whose amounts were computed by hand from OpenZeppelin's
// rounding rules; here they must come out of the API, after a stop half-way, a node outage and a
// reorg deeper than the confirmations.

const skip = anvilSkip()

const iso = (block: number | bigint) => new Date((GENESIS_TIME + BLOCK_TIME * Number(block)) * 1000).toISOString()
const FAST_RETRY = { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 }
const usd = (x: number) => BigInt(Math.round(x * 1e6))

const TOPIC = {
  Deposit: toEventSelector('Deposit(address,address,uint256,uint256)'),
  Withdraw: toEventSelector('Withdraw(address,address,address,uint256,uint256)'),
  RedeemRequest: toEventSelector('RedeemRequest(address,address,uint256,address,uint256)'),
}

/** `<chain id>:<tx hash>:<log index>` of the vault's event in a receipt. */
function idOf(receipt: TransactionReceipt, vault: Address, event: keyof typeof TOPIC): string {
  const log = receipt.logs.find((l) => l.address.toLowerCase() === vault && l.topics[0] === TOPIC[event])
  if (!log) throw new Error(`no ${event} of ${vault} in ${receipt.transactionHash}`)
  return `${CHAIN_ID}:${receipt.transactionHash}:${log.logIndex}`
}

/** A transport to anvil that counts requests, can fail them all (a node restarting), and calls `onLogs` on each eth_getLogs. */
function controlledTransport(url: string) {
  const counts = new Map<string, number>()
  const control = {
    down: false,
    /** Blocks from this one on are unknown to the node (a lagging node of a load-balanced provider). */
    missingFrom: undefined as bigint | undefined,
    onLogs: undefined as (() => void) | undefined,
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    transport: nodeTransport(url, async (req, forward) => {
      counts.set(req.method, (counts.get(req.method) ?? 0) + 1)
      if (control.down) throw rpcError(-32603, 'node restarting')
      if (control.missingFrom !== undefined && req.method === 'eth_getBlockByNumber' && BigInt((req.params as [string])[0]) >= control.missingFrom) return null
      if (req.method === 'eth_getLogs') control.onLogs?.()
      return forward()
    }),
  }
  return control
}

describe.skipIf(skip)(anvilSuiteTitle(`chain source followed into the API (anvil, ${testBackend})`, skip), () => {
  let anvil: Anvil
  let chain: TestChain
  let db: Database
  let app: App
  let vault: Address
  let asyncVault: Address
  let alice: Address, bob: Address, carol: Address, dave: Address, eve: Address
  const r: Record<string, TransactionReceipt> = {}
  let follower: SourceFollower | undefined
  let node: ReturnType<typeof controlledTransport>

  const request = async (path: string) => {
    const res = await app.fetch(new Request(`http://vaultgate.test${path}`))
    return { status: res.status, body: await res.json() }
  }
  const graphql = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await app.fetch(
      new Request('http://vaultgate.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query, variables }),
      }),
    )
    return res.json()
  }

  function sources(maxBlockRange: number): SourcesConfig {
    const meta = (id: string, name: string) => ({
      id,
      name,
      symbol: 'vgUSD',
      base_asset: 'tUSD',
      status: 'active',
      perf_fee_bps: 1000,
      mgmt_fee_bps: 50,
      api_endpoint: 'https://vaults.example/api',
      description: `${name} on anvil`,
    })
    return parseSourcesConfig({
      chains: {
        anvil: { chain_id: CHAIN_ID, rpc_url: anvil.url, confirmations: 2, poll_interval_ms: 100, requests_per_second: 10_000, max_block_range: maxBlockRange },
      },
      vaults: [
        { ...meta('usd-4626', 'Test USD 4626'), chain: 'anvil', address: vault, kind: 'erc4626', from_block: 3, base_asset_price_usd: '1' },
        { ...meta('usd-7540', 'Test USD 7540'), chain: 'anvil', address: asyncVault, kind: 'erc7540', from_block: 3 },
      ],
    })
  }

  const status = async (): Promise<SourceStatus> => (await sourcesStatus(db.prisma, sources(5)))[0]!
  const syncedTo = (block: bigint) => valueWhen(`synced to ${block}`, status, (s) => s.syncedBlock !== null && BigInt(s.syncedBlock) >= block)
  const confirmedHead = async () => (await chain.blockNumber()) - 2n

  /** A metric's value for the anvil chain (0 when it has none yet). */
  const metric = async (name: string, labels: Record<string, string> = {}) =>
    (await registry.getSingleMetric(name)!.get()).values.find((v) => v.labels.chain === 'anvil' && Object.entries(labels).every(([k, x]) => v.labels[k] === x))
      ?.value ?? 0
  const rpcFailures = (retried: 'true' | 'false') => metric('vaultgate_source_rpc_failures_total', { retried })

  async function transactionRows(): Promise<ImportTransaction[]> {
    return db.prisma.$queryRawUnsafe(
      `SELECT id, vault_id, tx_hash, to_char(timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS timestamp, address, type::text, status::text,
         trim_scale(amount)::text AS amount, trim_scale(shares)::text AS shares,
         to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS completed_at
       FROM transactions ORDER BY timestamp, id`,
    )
  }
  async function snapshotRows(): Promise<VaultSnapshot[]> {
    return db.prisma.$queryRawUnsafe(
      `SELECT vault_id, to_char(as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS as_of, trim_scale(share_price)::text AS share_price,
         trim_scale(tvl)::text AS tvl, trim_scale(base_asset_price_usd)::text AS base_asset_price_usd
       FROM vault_snapshots ORDER BY as_of, vault_id`,
    )
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    chain = new TestChain(anvil.url, anvil.accounts)
    ;[, alice, bob, carol, dave, eve] = anvil.accounts as [Address, Address, Address, Address, Address, Address]
    ;({ vault, asyncVault } = await chain.deployAll()) // blocks 1-3
    await chain.installMulticall3()
    await chain.fund(alice, vault, usd(1500.25)) // 4, 5
    r.aliceDeposit = await chain.deposit(alice, vault, usd(1500.25)) // 6
    await chain.donate(vault, usd(17.3)) // 7: yield without an event
    await chain.fund(bob, vault, usd(250.5)) // 8, 9
    r.bobDeposit = await chain.deposit(bob, vault, usd(250.5)) // 10
    r.aliceWithdraw = await chain.withdraw(alice, vault, usd(100)) // 11
    await chain.approveShares(bob, vault, carol, 10n ** 30n) // 12
    r.bobWithdraw = await chain.withdraw(bob, vault, 50_000_001n, { sender: carol }) // 13: Bob's shares, so Bob's withdraw
    await chain.fund(carol, asyncVault, usd(3400)) // 14, 15
    r.carolDeposit = await chain.deposit(carol, asyncVault, usd(3000)) // 16
    await chain.donate(asyncVault, usd(30)) // 17
    r.daveDeposit = await chain.deposit(carol, asyncVault, usd(400), dave) // 18: Dave's shares
    r.carolRequest = await chain.requestRedeem(carol, 1000n * 10n ** 18n) // 19
    r.daveRequest = await chain.requestRedeem(dave, await chain.shares(asyncVault, dave)) // 20
    await chain.mine(3) // 21-23
    await chain.fulfill(carol, 1000n * 10n ** 18n) // 24
    r.carolClaim1 = await chain.claim(carol, 600n * 10n ** 18n) // 25
    r.carolClaim2 = await chain.claim(carol, 400n * 10n ** 18n) // 26
    await chain.mine(2) // 27, 28
    db = await testDatabase()
    // Requests are answered as of a day after genesis: the redeem delay averages the last 90 days.
    const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', RESPONSE_CACHE_TTL_MS: '0', WEBHOOK_WORKER: 'false' })
    app = createApp({ config, db, clock: () => new Date((GENESIS_TIME + 86_400) * 1000) })
    await app.ready
    node = controlledTransport(anvil.url)
  })

  afterAll(async () => {
    await follower?.stop()
    await app?.close()
    await db?.close()
    await anvil?.stop()
  })

  const transaction = (
    receipt: TransactionReceipt,
    event: keyof typeof TOPIC,
    vaultId: 'usd-4626' | 'usd-7540',
    fields: Pick<ImportTransaction, 'address' | 'type' | 'status' | 'amount' | 'shares' | 'completed_at'> & { block: number },
  ): ImportTransaction => {
    const { block, ...rest } = fields
    return {
      id: idOf(receipt, vaultId === 'usd-4626' ? vault : asyncVault, event),
      vault_id: vaultId,
      tx_hash: receipt.transactionHash,
      timestamp: iso(block),
      ...rest,
    }
  }
  const done = (block: number) => ({ status: 'completed' as const, completed_at: iso(block), block })
  const expectedTransactions = (): ImportTransaction[] => [
    transaction(r.aliceDeposit!, 'Deposit', 'usd-4626', { address: alice, type: 'deposit', amount: '1500.25', shares: '1500.25', ...done(6) }),
    transaction(r.bobDeposit!, 'Deposit', 'usd-4626', { address: bob, type: 'deposit', amount: '250.5', shares: '247.64431155669051329', ...done(10) }),
    transaction(r.aliceWithdraw!, 'Withdraw', 'usd-4626', { address: alice, type: 'withdraw', amount: '100', shares: '98.860004613449306703', ...done(11) }),
    transaction(r.bobWithdraw!, 'Withdraw', 'usd-4626', { address: bob, type: 'withdraw', amount: '50.000001', shares: '49.430003295324699486', ...done(13) }),
    transaction(r.carolDeposit!, 'Deposit', 'usd-7540', { address: carol, type: 'deposit', amount: '3000', shares: '3000', ...done(16) }),
    transaction(r.daveDeposit!, 'Deposit', 'usd-7540', { address: dave, type: 'deposit', amount: '400', shares: '396.039603961703101002', ...done(18) }),
    // convertToAssets(1000 shares) at the end of block 19; completed by the second claim (block 26)
    {
      ...transaction(r.carolRequest!, 'RedeemRequest', 'usd-7540', { address: carol, type: 'redeem', amount: '1009.999999', shares: '1000', ...done(26) }),
      timestamp: iso(19),
    },
    transaction(r.daveRequest!, 'RedeemRequest', 'usd-7540', {
      address: dave,
      type: 'redeem',
      status: 'pending',
      amount: '399.999999',
      shares: '396.039603961703101002',
      completed_at: null,
      block: 20,
    }),
  ]
  const snap = (vaultId: string, block: number, share_price: string, tvl: string): VaultSnapshot => ({
    vault_id: vaultId,
    as_of: iso(block),
    share_price,
    tvl,
    // the sources file gives usd-4626 a USD price of 1, and usd-7540 none
    base_asset_price_usd: vaultId === 'usd-4626' ? '1' : null,
  })
  const expectedSnapshots = [
    snap('usd-4626', 3, '1', '0'),
    snap('usd-7540', 3, '1', '0'),
    snap('usd-4626', 6, '1', '1500.25'),
    snap('usd-4626', 10, '1.011531', '1768.05'),
    snap('usd-4626', 11, '1.011531', '1668.05'),
    snap('usd-4626', 13, '1.011531', '1618.049999'),
    snap('usd-7540', 16, '1', '3000'),
    snap('usd-7540', 18, '1.009999', '3430'),
    snap('usd-7540', 19, '1.009999', '3430'),
    snap('usd-7540', 20, '1.009999', '3430'),
    snap('usd-7540', 25, '1.01', '2420.000001'),
    snap('usd-7540', 26, '1.01', '2420.000001'),
  ]

  it('records the chain range by range; a follower stopped half-way is resumed by the next: nothing lost, nothing twice', async () => {
    // The first follower reads ranges of 5 blocks and is stopped while it reads its third, [13, 17].
    let logs = 0
    let stopping: Promise<void> | undefined
    node.onLogs = () => {
      if (++logs === 3) stopping = first.stop()
    }
    const first = startSourceFollower({ sources: sources(5), db: db.prisma, transport: () => node.transport, retry: FAST_RETRY })
    expect(first.following).toBe(true) // no lock embedded, nor here (no lock connection given)
    await valueWhen(
      'the first follower stopped',
      async () => stopping !== undefined,
      (stopped) => stopped,
    )
    await stopping
    node.onLogs = undefined
    // It finished the range it was reading, and no other.
    expect(await status()).toMatchObject({ syncedBlock: '17', syncedAt: new Date(iso(17)), headBlock: '28', lagBlocks: 11 })
    const beforeRestart = await transactionRows()
    expect(beforeRestart).toEqual(expectedTransactions().filter((t) => t.timestamp <= iso(17)))

    follower = startSourceFollower({ sources: sources(5), db: db.prisma, transport: () => node.transport, retry: FAST_RETRY })
    await syncedTo(26n)
    expect(await transactionRows()).toEqual(expectedTransactions())
    expect(await snapshotRows()).toEqual(expectedSnapshots)
    expect(await status()).toEqual({
      name: 'chain:anvil',
      chain: 'anvil',
      chainId: CHAIN_ID,
      vaultIds: ['usd-4626', 'usd-7540'],
      status: 'ok',
      headBlock: '28',
      syncedBlock: '26',
      syncedAt: new Date(iso(26)),
      lagBlocks: 2,
      lastSuccessAt: expect.any(Date),
      lastError: null,
      lastErrorAt: null,
    })
  })

  it('answers REST and GraphQL from what it recorded: live values, transactions, pending redeems, positions', async () => {
    const vaultBody = await request('/v1/vaults/usd-4626')
    expect(vaultBody).toEqual({
      status: 200,
      body: {
        id: 'usd-4626',
        name: 'Test USD 4626',
        chain: 'anvil',
        chain_id: String(CHAIN_ID),
        symbol: 'vgUSD',
        base_asset: 'tUSD',
        status: 'active',
        tvl: '1618.049999',
        share_price: '1.011531',
        perf_fee_bps: 1000,
        mgmt_fee_bps: 50,
        contract: { address: vault },
        deposit_constraints: { max_deposit: null, min_deposit: null, paused: null },
        withdraw_constraints: {
          instant_liquidity: null,
          instant_slippage_max_bps: null,
          redeem_24h_threshold_pct_of_aum: null,
          redeem_48h_above_threshold: null,
        },
        icons: { dark: null, light: null },
        api_endpoint: 'https://vaults.example/api',
        description: 'Test USD 4626 on anvil',
        docs_url: null,
        inception_date: null,
        strategy_brief: null,
      },
    })
    expect(await graphql('{ a: vault(id: "usd-4626") { tvl sharePrice } b: vault(id: "usd-7540") { tvl sharePrice } }')).toEqual(
      answered({ a: { tvl: '1618.049999', sharePrice: '1.011531' }, b: { tvl: '2420.000001', sharePrice: '1.01' } }),
    )

    const [aliceDeposit, bobDeposit, aliceWithdraw, bobWithdraw, , , carolRedeem, daveRedeem] = expectedTransactions()
    const wire = (t: ImportTransaction) => ({
      id: t.id,
      vault_id: t.vault_id,
      type: t.type,
      status: t.status,
      amount: t.amount,
      timestamp: t.timestamp,
      tx_hash: t.tx_hash,
    })
    expect(await request(`/v1/users/${bob}/vaults/usd-4626/transactions`)).toEqual({
      status: 200,
      body: { items: [wire(bobWithdraw!), wire(bobDeposit!)], next_cursor: null },
    })
    expect((await request(`/v1/users/${alice}/vaults/usd-4626/transactions`)).body.items).toEqual([wire(aliceWithdraw!), wire(aliceDeposit!)])

    // Wallet answers are as of the newest data recorded in their vaults (decisions §10: the
    // chain's block times), not the gateway's clock (a day after genesis here): each vault's own
    // time, the Data-As-Of of an answer about it, never later than the gateway's.
    const gatewayAsOf = (await request('/v1/status')).body.data_as_of as string
    expect(gatewayAsOf < iso(86_400 / BLOCK_TIME)).toBe(true)
    const vaultAsOf = async (id: string) => (await app.fetch(new Request(`http://vaultgate.test/v1/vaults/${id}`))).headers.get('data-as-of')!
    const [asOf7540, asOf4626] = [await vaultAsOf('usd-7540'), await vaultAsOf('usd-4626')]
    expect([asOf7540 <= gatewayAsOf, asOf4626 <= gatewayAsOf, [asOf7540, asOf4626].includes(gatewayAsOf)]).toEqual([true, true, true])
    // Dave's redeem is pending; Carol's completed in 7 blocks (84 s), the vault's average delay.
    expect(await request(`/v1/users/${dave}/redeems`)).toEqual({
      status: 200,
      body: {
        address: dave,
        as_of: asOf7540,
        // The queue (decisions §14): first in line; Carol's one delay of 84 s is both percentiles.
        pending_redeems: [
          {
            vault_id: 'usd-7540',
            amount: '399.999999',
            submitted_at: iso(20),
            transaction_type: 'redeem',
            tx_hash: daveRedeem!.tx_hash,
            status: 'pending',
            queue_position: 1,
            amount_ahead: '0',
            eta: { p50: iso(27), p90: iso(27) },
          },
        ],
        total_pending: '399.999999',
        total_claimable: '0',
        average_redeem_delay: 84,
      },
    })
    expect((await request(`/v1/users/${carol}/redeems`)).body.pending_redeems).toEqual([])
    expect(carolRedeem!.status).toBe('completed')

    // Bob: 247.64431155669051329 − 49.430003295324699486 shares, at the live share price 1.011531 and USD price 1.
    expect(await request(`/v1/users/${bob}/vaults/usd-4626/summary`)).toEqual({
      status: 200,
      body: {
        vault_id: 'usd-4626',
        as_of: asOf4626,
        share_balance: '198.214308261365813804',
        share_price: '1.011531',
        position_value_usd: '200.499917449927623003',
        total_deposits: '250.5',
        all_time_earned: '-0.000081550072376997',
        first_deposit_at: iso(10),
      },
    })
    // usd-7540 has no USD price in the sources file: no position value. Dave's shares are all in his pending redeem.
    expect(
      await graphql(
        `query($a: String!, $c: String!) {
          dave: user(address: $a) { position(vaultId: "usd-7540") { shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned } pendingRedeems { totalPending } }
          carol: user(address: $c) { position(vaultId: "usd-7540") { shareBalance positionValueUsd allTimeEarned } }
        }`,
        { a: dave, c: carol },
      ),
    ).toEqual(
      answered({
        dave: {
          position: { shareBalance: '0', sharePrice: '1.01', positionValueUsd: null, totalDeposits: '400', allTimeEarned: '-0.000001' },
          pendingRedeems: { totalPending: '399.999999' },
        },
        carol: { position: { shareBalance: '2000', positionValueUsd: null, allTimeEarned: '29.999999' } },
      }),
    )
  })

  it('follows new blocks as they come, through a node that fails for a while', async () => {
    // Every instance hears of a range that recorded something (caches, subscriptions), and only of those.
    let notified = 0
    const feed = watchDataChanges(db.changes, { onChange: () => notified++, onLive: () => {} })
    await feed.ready
    node.down = true
    const failing = await valueWhen('the failure recorded', status, (s) => s.lastError !== null)
    expect(failing.lastError).toMatch(/node restarting/)
    expect(failing.lastError).not.toContain(anvil.url)
    // Each request was tried twice (FAST_RETRY): a retried attempt, then the one given up.
    expect(await rpcFailures('true')).toBeGreaterThan(0)
    expect(await rpcFailures('false')).toBeGreaterThan(0)
    node.down = false

    await chain.fund(eve, vault, usd(42)) // 29, 30
    r.eveDeposit = await chain.deposit(eve, vault, usd(42)) // 31
    await chain.mine(2) // 32, 33
    await syncedTo(31n)
    expect((await request(`/v1/users/${eve}/vaults/usd-4626/transactions`)).body.items).toEqual([
      {
        id: idOf(r.eveDeposit!, vault, 'Deposit'),
        vault_id: 'usd-4626',
        type: 'deposit',
        status: 'completed',
        amount: '42',
        timestamp: iso(31),
        tx_hash: r.eveDeposit!.transactionHash,
      },
    ])
    expect((await request('/v1/vaults/usd-4626')).body).toMatchObject({ tvl: '1660.049999', share_price: '1.011531' })
    await valueWhen(
      'the change announced',
      async () => notified,
      (n) => n > 0,
    )
    notified = 0
    // Once it succeeds again, the error is history.
    const recovered = await valueWhen('the error cleared', status, (st) => st.lastError === null)
    expect(recovered).toMatchObject({ lastError: null, lastErrorAt: null, lastSuccessAt: expect.any(Date) })

    // A node that lags behind the block the follower stands on (another node behind a provider's
    // load balancer) cannot say whether that block is still the chain's: the follower waits for
    // it, and takes it for no reorg.
    const standing = BigInt(recovered.syncedBlock!)
    node.missingFrom = standing
    await chain.mine(1)
    const lagging = await valueWhen('the lag reported', status, (st) => st.lastError?.includes(`has no block ${standing}`) ?? false)
    expect(lagging.lastError).toBe(`the node has no block ${standing} (behind, or its chain is shorter); asking again at the next poll`)
    expect(lagging.syncedBlock).toBe(String(standing))
    node.missingFrom = undefined
    await syncedTo(await confirmedHead())
    expect(await metric('vaultgate_source_reorgs_total')).toBe(0)

    // The load on the node while following block by block (printed for docs/chain-source.md).
    node.counts.clear()
    const blocks = 10
    for (let i = 0; i < blocks; i++) {
      await chain.mine(1)
      await syncedTo(await confirmedHead())
    }
    const perMethod = Object.fromEntries(node.counts)
    const withoutPolls = node.total() - (node.counts.get('eth_blockNumber') ?? 0)
    console.log(
      `[rpc load] following block by block: ${withoutPolls} requests besides eth_blockNumber polls for ${blocks} blocks (2 vaults) = ${(withoutPolls / blocks).toFixed(2)} per block`,
      perMethod,
    )
    await new Promise((resolve) => setTimeout(resolve, 100))
    await feed.stop()
    expect(notified).toBe(0) // ranges without records announce nothing
    // per new block: the cursor block's header (still the chain's?), eth_getLogs, the new block's header
    expect(node.counts.get('eth_getLogs')).toBe(blocks)
    expect(node.counts.get('eth_getBlockByNumber')).toBe(2 * blocks)
    // Dave's redeem is still pending: each range asks whether it is claimable, one Multicall3 call.
    expect(node.counts.get('eth_call') ?? 0).toBe(blocks)
  })

  it('rolls a reorg deeper than the confirmations back: its events leave the answers, the redeem it completed is pending again', async () => {
    const hooks = await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/hooks', event_types: ['transaction.status_changed', 'redeem.completed'] })
    const removals = await serviceFor(db).createEndpoint({ url: 'http://127.0.0.1:9/removals', event_types: ['transaction.removed', 'vault.updated'] })
    const fork = await chain.snapshot()
    const forkBlock = await chain.blockNumber()
    // The branch that will be replaced: Dave's redeem fulfilled and claimed, Alice deposits again.
    // The follower waits at the fork until the branch is mined, so one range holds both the
    // fulfilment and the claim: the redeem is never seen claimable in between (decisions §14;
    // test/sources/redeem-lifecycle-anvil.test.ts follows that state).
    node.missingFrom = forkBlock + 1n
    await chain.fulfill(dave, 396_039_603_961_703_101_002n)
    const daveClaim = await chain.claim(dave, 396_039_603_961_703_101_002n)
    await chain.fund(alice, vault, usd(5))
    const aliceAgain = await chain.deposit(alice, vault, usd(5))
    await chain.mine(2)
    node.missingFrom = undefined
    await syncedTo(aliceAgain.blockNumber)
    const daveRedeemId = idOf(r.daveRequest!, asyncVault, 'RedeemRequest')
    expect((await request(`/v1/users/${dave}/redeems`)).body.pending_redeems).toEqual([])
    expect((await request(`/v1/users/${alice}/vaults/usd-4626/transactions`)).body.items.map((t: { id: string }) => t.id)).toContain(
      idOf(aliceAgain, vault, 'Deposit'),
    )
    expect((await request('/v1/vaults/usd-4626')).body.tvl).toBe('1665.049999')

    // The chain goes back to the fork, and another branch grows past the old one: Bob deposits instead.
    await chain.revert(fork)
    await chain.fund(bob, vault, usd(7)) // fork + 1, + 2
    const bobAgain = await chain.deposit(bob, vault, usd(7)) // fork + 3
    await chain.mine(6)
    await valueWhen(
      "the new branch's deposit recorded",
      () => request(`/v1/users/${bob}/vaults/usd-4626/transactions`),
      (res) => res.body.items?.[0]?.id === idOf(bobAgain, vault, 'Deposit'),
    )
    await syncedTo(await confirmedHead())

    // Dave's redeem is pending again, Alice's second deposit is gone, Bob's is there.
    expect((await request(`/v1/users/${dave}/redeems`)).body.pending_redeems).toEqual([
      {
        vault_id: 'usd-7540',
        amount: '399.999999',
        submitted_at: iso(20),
        transaction_type: 'redeem',
        tx_hash: r.daveRequest!.transactionHash,
        status: 'pending',
        queue_position: 1,
        amount_ahead: '0',
        eta: { p50: iso(27), p90: iso(27) },
      },
    ])
    expect((await request(`/v1/users/${alice}/vaults/usd-4626/transactions`)).body.items.map((t: { id: string }) => t.id)).not.toContain(
      idOf(aliceAgain, vault, 'Deposit'),
    )
    const rows = await transactionRows()
    expect(rows.filter((t) => t.timestamp > iso(forkBlock))).toEqual([
      transaction(bobAgain, 'Deposit', 'usd-4626', {
        address: bob,
        type: 'deposit',
        amount: '7',
        shares: '6.920200322941451469',
        ...done(Number(bobAgain.blockNumber)),
      }),
    ])
    expect(rows.find((t) => t.id === daveRedeemId)).toMatchObject({ status: 'pending', completed_at: null })
    // The old branch's snapshots are gone; the live values are the new branch's newest snapshot.
    expect((await snapshotRows()).filter((s) => s.as_of > iso(forkBlock))).toEqual([snap('usd-4626', Number(bobAgain.blockNumber), '1.011531', '1667.049999')])
    expect((await request('/v1/vaults/usd-4626')).body).toMatchObject({ tvl: '1667.049999', share_price: '1.011531' })
    expect((await request('/v1/vaults/usd-7540')).body).toMatchObject({ tvl: '2420.000001', share_price: '1.01' })

    // Webhooks: the redeem's completion, then its return to pending.
    const events = await db.prisma.$queryRawUnsafe<{ type: string; payload: Record<string, unknown> }[]>(
      `SELECT e.type, e.payload FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE d.endpoint_id = $1::uuid ORDER BY e.created_at, e.type`,
      hooks.endpoint.id,
    )
    expect(events.map((e) => [e.type, e.payload.id, e.payload.status, e.payload.previous_status ?? null, e.payload.completed_at])).toEqual([
      ['redeem.completed', daveRedeemId, 'completed', null, iso(daveClaim.blockNumber)],
      ['transaction.status_changed', daveRedeemId, 'completed', 'pending', iso(daveClaim.blockNumber)],
      ['transaction.status_changed', daveRedeemId, 'pending', 'completed', null],
    ])
    // What the reorg took away is announced: Alice's second deposit removed (as it was recorded),
    // and both vaults updated to their values without the replaced branch, before the new branch.
    const announced = await db.prisma.$queryRawUnsafe<{ type: string; payload: Record<string, unknown> }[]>(
      `SELECT e.type, e.payload FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE d.endpoint_id = $1::uuid ORDER BY e.created_at, e.type, e.vault_id`,
      removals.endpoint.id,
    )
    const removed = announced.filter((e) => e.type === 'transaction.removed').map((e) => e.payload)
    expect(removed).toEqual([
      {
        id: idOf(aliceAgain, vault, 'Deposit'),
        vault_id: 'usd-4626',
        address: alice,
        type: 'deposit',
        status: 'completed',
        amount: '5',
        shares: expect.any(String),
        timestamp: iso(aliceAgain.blockNumber),
        completed_at: iso(aliceAgain.blockNumber),
        tx_hash: aliceAgain.transactionHash,
      },
    ])
    const afterRemoval = announced.slice(announced.findIndex((e) => e.type === 'transaction.removed'))
    expect(afterRemoval.filter((e) => e.type === 'vault.updated').map((e) => [e.payload.vault_id, e.payload.tvl])).toEqual(
      expect.arrayContaining([
        ['usd-4626', '1660.049999'],
        ['usd-7540', '2420.000001'],
      ]),
    )
    expect(await metric('vaultgate_source_reorgs_total')).toBe(1)
  })

  it('at its start, leaves out a vault the chain contradicts (with the error in the status) and brings the others up to the file', async () => {
    await follower!.stop()
    const before = await snapshotRows()
    const failuresBefore = [await rpcFailures('true'), await rpcFailures('false')]
    const file = sources(5)
    const renamed = { ...file.vaults[0]!, metadata: { ...file.vaults[0]!.metadata, name: 'Test USD 4626 (renamed)', perf_fee_bps: 900 } }
    // Not an ERC-7540 vault, whatever the file says.
    const wrong = { ...file.vaults[0]!, id: 'not-async', kind: 'erc7540' as const, metadata: { ...file.vaults[0]!.metadata, name: 'Not async' } }
    follower = startSourceFollower({ sources: { ...file, vaults: [renamed, file.vaults[1]!, wrong] }, db: db.prisma, retry: FAST_RETRY })
    const failed = await valueWhen('the error recorded', status, (st) => st.lastError?.includes('vaults[2].kind') ?? false)
    expect(failed.lastError).toBe(
      'vaults[2].kind: is "erc7540", but the contract is not an ERC-7540 vault: supportsInterface(0x620ee8e4) is not true and pendingRedeemRequest() does not answer',
    )
    await valueWhen(
      'the new name',
      () => request('/v1/vaults/usd-4626'),
      (res) => res.body.name === 'Test USD 4626 (renamed)',
    )
    expect((await request('/v1/vaults/usd-4626')).body).toMatchObject({ name: 'Test USD 4626 (renamed)', perf_fee_bps: 900, tvl: '1667.049999' })
    // New metadata is not a new observation of the live values: no snapshot at the wall clock's time.
    expect(await snapshotRows()).toEqual(before)
    expect((await request('/v1/vaults/not-async')).status).toBe(404)
    // The probes that revert (pendingRedeemRequest of a vault without it) are answers, not node failures.
    expect([await rpcFailures('true'), await rpcFailures('false')]).toEqual(failuresBefore)
    expect(await db.prisma.$queryRawUnsafe(`SELECT vault_id FROM source_cursors ORDER BY vault_id`)).toEqual([
      { vault_id: 'usd-4626' },
      { vault_id: 'usd-7540' },
    ])
    // The others are followed on; the vault left out stays the chain's last error.
    await chain.mine(1)
    await syncedTo(await confirmedHead())
    expect((await status()).lastError).toBe(failed.lastError)
  })
})
