import { toEventSelector, type Address, type TransactionReceipt } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registry } from '../../src/core/metrics.js'
import { parseSourcesConfig } from '../../src/sources/config.js'
import { startSourceFollower, type SourceFollower } from '../../src/sources/follower.js'
import { sourcesStatus } from '../../src/sources/status.js'
import {
  anvilSkip,
  anvilSuiteTitle,
  BLOCK_TIME,
  CHAIN_ID,
  GENESIS_TIME,
  MULTICALL3_ADDRESS,
  nodeTransport,
  startAnvil,
  TestChain,
  type Anvil,
} from '../support/anvil.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { ADMIN_TOKEN } from '../support/keys.js'
import { startReceiver, within, type Receiver } from '../webhooks/receiver.js'

// The redeem lifecycle of decisions §14 end to end, on this backend: real ERC-7540 requests on
// anvil (test/sources/contracts/AsyncRedeemVault.sol), the follower asking the vault's
// claimableRedeemRequest for the requests it holds as pending (every one in one Multicall3
// call), the gateway's answers at each step, and the `redeem.claimable` / `redeem.completed`
// webhooks delivered by the gateway's own worker to a real receiver that verifies them.

const skip = anvilSkip()
const iso = (block: number | bigint) => new Date((GENESIS_TIME + BLOCK_TIME * Number(block)) * 1000).toISOString()
const FAST_RETRY = { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 }
const usd = (x: number) => BigInt(Math.round(x * 1e6))
const SHARE = 10n ** 18n
const REDEEM_REQUEST = toEventSelector('RedeemRequest(address,address,uint256,address,uint256)')

describe.skipIf(skip)(anvilSuiteTitle(`ERC-7540 redeem lifecycle: pending → claimable → completed (anvil, ${testBackend})`, skip), () => {
  let anvil: Anvil
  let chain: TestChain
  let t: TestApp
  let receiver: Receiver
  let follower: SourceFollower | undefined
  let asyncVault: Address
  let carol: Address, dave: Address
  const r: Record<string, TransactionReceipt> = {}
  /** The eth_calls the follower sent, as (to, block). */
  const calls: { to: string; block: string }[] = []
  /** Dave's ETA once Carol's redeem completed (both percentiles of the vault's one delay). */
  let daveEta: string

  const get = async (path: string) => (await t.request(path)).json()
  const idOf = (receipt: TransactionReceipt) => {
    const log = receipt.logs.find((l) => l.address.toLowerCase() === asyncVault && l.topics[0] === REDEEM_REQUEST)!
    return `${CHAIN_ID}:${receipt.transactionHash}:${log.logIndex}`
  }
  const syncedTo = (block: bigint) =>
    within(30_000, async () => {
      const [s] = await sourcesStatus(t.db.prisma, sources())
      return s?.syncedBlock !== null && s?.syncedBlock !== undefined && BigInt(s.syncedBlock) >= block
    }).then((ok) => expect(ok).toBe(true))
  const confirmedHead = async () => (await chain.blockNumber()) - 2n

  function sources() {
    return parseSourcesConfig({
      chains: { anvil: { chain_id: CHAIN_ID, rpc_url: anvil.url, confirmations: 2, poll_interval_ms: 100, requests_per_second: 10_000, max_block_range: 100 } },
      vaults: [
        {
          id: 'q-7540',
          name: 'Queue 7540',
          symbol: 'vgUSD',
          base_asset: 'tUSD',
          status: 'active',
          perf_fee_bps: 0,
          mgmt_fee_bps: null,
          api_endpoint: 'https://vaults.example/api',
          chain: 'anvil',
          address: asyncVault,
          kind: 'erc7540',
          from_block: 3,
        },
      ],
    })
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    chain = new TestChain(anvil.url, anvil.accounts)
    ;[, , , carol, dave] = anvil.accounts as [Address, Address, Address, Address, Address]
    ;({ asyncVault } = await chain.deployAll()) // blocks 1-3
    await chain.installMulticall3()
    await chain.fund(carol, asyncVault, usd(3400)) // 4, 5
    await chain.deposit(carol, asyncVault, usd(3000)) // 6
    await chain.deposit(carol, asyncVault, usd(400), dave) // 7: Dave's shares
    r.carol = await chain.requestRedeem(carol, 1000n * SHARE) // 8
    r.dave = await chain.requestRedeem(dave, 400n * SHARE) // 9
    await chain.mine(2) // 10, 11
    receiver = await startReceiver()
    // Answers as of a day after genesis: the delays of the last 90 days include the chain's.
    t = await createTestApp(
      { ADMIN_TOKEN, WEBHOOK_WORKER: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '50' },
      { clock: () => new Date((GENESIS_TIME + 86_400) * 1000) },
    )
    const res = await t.request('/admin/webhooks', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url('/redeems'), event_types: ['redeem.claimable', 'redeem.completed'] }),
    })
    expect(res.status).toBe(201)
    receiver.secrets.set('/redeems', ((await res.json()) as { data: { secret: string } }).data.secret)
    const transport = nodeTransport(anvil.url, (req, forward) => {
      if (req.method === 'eth_call') {
        const [call, block] = req.params as [{ to: string }, string]
        calls.push({ to: call.to.toLowerCase(), block })
      }
      return forward()
    })
    follower = startSourceFollower({ sources: sources(), db: t.db.prisma, transport: () => transport, retry: FAST_RETRY })
  })

  afterAll(async () => {
    await follower?.stop()
    await t?.close()
    await receiver?.close()
    await anvil?.stop()
  })

  const carolItem = () => ({ vault_id: 'q-7540', amount: '1000', submitted_at: iso(8), transaction_type: 'redeem', tx_hash: r.carol!.transactionHash })
  const daveItem = () => ({ vault_id: 'q-7540', amount: '400', submitted_at: iso(9), transaction_type: 'redeem', tx_hash: r.dave!.transactionHash })
  const redeemed = (receipt: TransactionReceipt, address: Address, amount: string, block: number) => ({
    id: idOf(receipt),
    vault_id: 'q-7540',
    address,
    type: 'redeem',
    amount,
    shares: amount,
    timestamp: iso(block),
    tx_hash: receipt.transactionHash,
  })
  const delivered = () =>
    receiver.requests.map((q) => {
      expect(q.verified).toBe(true)
      const body = JSON.parse(q.body) as { type: string; data: Record<string, unknown> }
      return { type: body.type, data: body.data }
    })

  it('records both requests pending, in queue order, and asks about them in one Multicall3 call per range', async () => {
    await syncedTo(9n)
    expect(await get(`/v1/users/${dave}/redeems`)).toMatchObject({
      pending_redeems: [{ ...daveItem(), status: 'pending', queue_position: 2, amount_ahead: '1000', eta: null }],
      total_pending: '400',
      total_claimable: '0',
    })
    // A range without events: the two pending requests are asked about together, through Multicall3, at the range's end.
    calls.length = 0
    const head = await chain.blockNumber()
    await chain.mine(1)
    await syncedTo(head - 1n)
    expect(calls).toEqual([{ to: MULTICALL3_ADDRESS.toLowerCase(), block: `0x${(head - 1n).toString(16)}` }])
    expect(receiver.requests).toEqual([])
  })

  it('marks the fulfilled request claimable, out of the queue, and delivers redeem.claimable', async () => {
    await chain.fulfill(carol, 1000n * SHARE)
    await chain.mine(2)
    await syncedTo(await confirmedHead())
    expect(await within(10_000, () => receiver.requests.length >= 1)).toBe(true)
    expect(delivered()).toEqual([{ type: 'redeem.claimable', data: { ...redeemed(r.carol!, carol, '1000', 8), status: 'claimable', completed_at: null } }])
    expect(await get(`/v1/users/${carol}/redeems`)).toMatchObject({
      pending_redeems: [{ ...carolItem(), status: 'claimable', queue_position: null, amount_ahead: null, eta: null }],
      total_pending: '0',
      total_claimable: '1000',
    })
    // Dave moves up: first in line, nothing ahead.
    expect((await get(`/v1/users/${dave}/redeems`)).pending_redeems).toEqual([
      { ...daveItem(), status: 'pending', queue_position: 1, amount_ahead: '0', eta: null },
    ])
    expect((await get(`/v1/users/${carol}/transactions?type=redeem`)).items).toEqual([
      { id: idOf(r.carol!), vault_id: 'q-7540', type: 'redeem', status: 'claimable', amount: '1000', timestamp: iso(8), tx_hash: r.carol!.transactionHash },
    ])
    // Asked once: a claimable request is not asked about again.
    calls.length = 0
    const head = await chain.blockNumber()
    await chain.mine(1)
    await syncedTo(head - 1n)
    expect(calls).toHaveLength(1)
  })

  it('completes it on the claim and delivers redeem.completed; the delay now dates Dave’s redeem', async () => {
    const claim = await chain.claim(carol, 1000n * SHARE)
    await chain.mine(2)
    await syncedTo(claim.blockNumber)
    expect(await within(10_000, () => receiver.requests.length >= 2)).toBe(true)
    const completedAt = iso(claim.blockNumber)
    expect(delivered()[1]).toEqual({
      type: 'redeem.completed',
      data: { ...redeemed(r.carol!, carol, '1000', 8), status: 'completed', completed_at: completedAt },
    })
    expect(await get(`/v1/users/${carol}/redeems`)).toMatchObject({ pending_redeems: [], total_pending: '0', total_claimable: '0' })
    // Carol's redeem took (claim block − 8) blocks: both percentiles of the vault's one delay.
    const delay = (Number(claim.blockNumber) - 8) * BLOCK_TIME
    const eta = new Date(Date.parse(iso(9)) + delay * 1000).toISOString()
    daveEta = eta
    expect(await get(`/v1/users/${dave}/redeems`)).toMatchObject({
      pending_redeems: [{ ...daveItem(), status: 'pending', queue_position: 1, amount_ahead: '0', eta: { p50: eta, p90: eta } }],
      total_pending: '400',
      total_claimable: '0',
      average_redeem_delay: delay,
    })
    expect(receiver.requests).toHaveLength(2)
  })

  it('puts a claimable redeem back in the queue when a reorg deeper than the confirmations takes its fulfilment away', async () => {
    const pendingDave = { ...daveItem(), status: 'pending', queue_position: 1, amount_ahead: '0', eta: { p50: daveEta, p90: daveEta } }
    const reorgs = async () =>
      (await registry.getSingleMetric('vaultgate_source_reorgs_total')!.get()).values.find((v) => v.labels.chain === 'anvil')?.value ?? 0
    const reorgsBefore = await reorgs()
    const fork = await chain.snapshot()
    // The branch that will be replaced: Dave's request fulfilled, seen claimable (and announced).
    await chain.fulfill(dave, 400n * SHARE) // fork + 1
    await chain.mine(2) // fork + 2, + 3: fork + 1 confirmed
    await syncedTo(await confirmedHead())
    expect(await within(10_000, () => receiver.requests.length >= 3)).toBe(true)
    expect(delivered()[2]).toEqual({ type: 'redeem.claimable', data: { ...redeemed(r.dave!, dave, '400', 9), status: 'claimable', completed_at: null } })
    expect(await get(`/v1/users/${dave}/redeems`)).toMatchObject({
      pending_redeems: [{ ...daveItem(), status: 'claimable', queue_position: null, amount_ahead: null, eta: null }],
      total_pending: '0',
      total_claimable: '400',
    })

    // Back to the fork, and a longer branch without the fulfilment: the follower finds its recorded
    // block replaced, rolls the range back, and reads the new branch, where the vault reports nothing claimable.
    await chain.revert(fork)
    await chain.mine(6) // fork + 1 … + 6: synced past the old branch's fork + 1 only on the new branch
    expect(await within(30_000, async () => (await get(`/v1/users/${dave}/redeems`)).total_claimable === '0')).toBe(true)
    await syncedTo(await confirmedHead())
    expect(await get(`/v1/users/${dave}/redeems`)).toMatchObject({ pending_redeems: [pendingDave], total_pending: '400', total_claimable: '0' })
    expect((await get(`/v1/users/${dave}/transactions?type=redeem`)).items).toEqual([
      { id: idOf(r.dave!), vault_id: 'q-7540', type: 'redeem', status: 'pending', amount: '400', timestamp: iso(9), tx_hash: r.dave!.transactionHash },
    ])
    expect(await reorgs()).toBe(reorgsBefore + 1)
    const [status] = await sourcesStatus(t.db.prisma, sources())
    expect(status).toMatchObject({ status: 'ok', lastError: null })
    // Nothing completed on either branch: no redeem.completed for Dave, and no second redeem.claimable.
    expect(receiver.requests).toHaveLength(3)
  })
})
