import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import { AppError } from '../../src/core/errors.js'
import { validateImportDocument } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { testBackend, testDatabase } from '../support/db.js'
import { liveTransaction } from '../support/live.js'

const HUGE = '123456789012345678901234567890123456789012345678901234567890.123456789012345678' // 60 + 18 digits
const ALICE = '0xAbCdEf0123456789aBcDeF0123456789ABCDEF01'

const fullVault = {
  id: 'usdc-main',
  name: 'Main USDC',
  chain: 'ethereum',
  chain_id: '1',
  symbol: 'vUSDC',
  base_asset: 'USDC',
  base_asset_price_usd: '0.9998',
  status: 'active',
  tvl: '12500000.5',
  share_price: '1.000000000000000001',
  perf_fee_bps: 1000,
  mgmt_fee_bps: 150,
  contract: { address: '0x1111111111111111111111111111111111111111' },
  deposit_constraints: { max_deposit: '1000000', min_deposit: '10', paused: false },
  withdraw_constraints: { instant_liquidity: true, instant_slippage_max_bps: 30, redeem_24h_threshold_pct_of_aum: 12.5, redeem_48h_above_threshold: true },
  icons: { dark: 'https://x.example/d.svg', light: 'https://x.example/l.svg' },
  api_endpoint: 'https://x.example/api/usdc-main',
  description: 'Lends USDC.',
  docs_url: 'https://x.example/docs',
  inception_date: '2025-11-20',
  strategy_brief: 'Blue chips only.',
}

// Optional spec fields left out entirely, or null.
const minimalVault = {
  id: 'weth-lite',
  name: 'WETH Lite',
  chain: 'base',
  chain_id: null,
  symbol: 'vWETH',
  base_asset: 'WETH',
  base_asset_price_usd: '3400',
  status: 'paused',
  tvl: '0',
  share_price: '1',
  perf_fee_bps: 0,
  contract: { address: '0x2222222222222222222222222222222222222222' },
  deposit_constraints: {},
  withdraw_constraints: { instant_liquidity: null },
  icons: {},
  api_endpoint: 'https://x.example/api/weth-lite',
}

const position = (platform: string, asset: string, pct: number, apy = 4.25) => ({
  platform,
  asset,
  symbol: asset,
  pct,
  apy_est_pct: apy,
  icon: `https://x.example/${platform}.svg`,
})

const tx = (id: string, fields: Record<string, unknown> = {}) => liveTransaction(id, 'usdc-main', ALICE, fields)

type Doc = { vaults: object[]; compositions: { vault_id: string; as_of: string; positions: object[] }[]; transactions: object[] }

const document = (): Doc => ({
  vaults: [fullVault, minimalVault],
  compositions: [
    { vault_id: 'usdc-main', as_of: '2026-11-21T06:00:00.000Z', positions: [position('aave', 'USDC', 60.5), position('morpho', 'USDC', 39.5, 6.1)] },
    { vault_id: 'usdc-main', as_of: '2026-11-21T13:00:00.25+01:00', positions: [position('aave', 'USDC', 100)] },
  ],
  transactions: [
    tx('t1', { amount: HUGE, shares: HUGE }),
    tx('t2', { type: 'redeem', status: 'pending', amount: '0.000000000000000001', shares: '5', timestamp: '2026-11-21T11:59:59.999Z', completed_at: null }),
    tx('t3', { vault_id: 'weth-lite', type: 'withdraw', status: 'failed', amount: '2.5', shares: '2.4' }),
  ],
})

describe(`import (${testBackend})`, () => {
  let db: Database

  beforeAll(async () => {
    db = await testDatabase()
  })
  afterAll(() => db?.close())

  const tableCounts = async () => ({
    vaults: await db.prisma.vault.count(),
    snapshots: await db.prisma.compositionSnapshot.count(),
    allocations: await db.prisma.allocation.count(),
    vaultSnapshots: await db.prisma.vaultSnapshot.count(),
    transactions: await db.prisma.transaction.count(),
  })

  it('imports a valid document, returns the counts written and stores every value exactly', async () => {
    expect(await importDocument(document(), db.prisma)).toEqual({ vaults: 2, compositions: 2, vault_snapshots: 0, transactions: 3 })
    // Each vault record recorded its live values as a snapshot.
    expect(await tableCounts()).toEqual({ vaults: 2, snapshots: 2, allocations: 3, vaultSnapshots: 2, transactions: 3 })

    const v = await db.prisma.vault.findUniqueOrThrow({ where: { id: 'usdc-main' } })
    // The vault's data time (decisions §10): its newest data, the snapshot its record just recorded.
    const recorded = await db.prisma.vaultSnapshot.findFirstOrThrow({ where: { vaultId: 'usdc-main' }, orderBy: { asOf: 'desc' } })
    expect({
      ...v,
      baseAssetPriceUsd: v.baseAssetPriceUsd?.toFixed(),
      tvl: v.tvl.toFixed(),
      sharePrice: v.sharePrice.toFixed(),
      maxDeposit: v.maxDeposit?.toFixed(),
      minDeposit: v.minDeposit?.toFixed(),
      inceptionDate: v.inceptionDate?.toISOString(),
      createdAt: undefined,
      updatedAt: undefined,
    }).toEqual({
      id: 'usdc-main',
      name: 'Main USDC',
      chain: 'ethereum',
      chainId: '1',
      symbol: 'vUSDC',
      baseAsset: 'USDC',
      baseAssetPriceUsd: '0.9998',
      status: 'active',
      tvl: '12500000.5',
      sharePrice: '1.000000000000000001',
      perfFeeBps: 1000,
      mgmtFeeBps: 150,
      contractAddress: '0x1111111111111111111111111111111111111111',
      maxDeposit: '1000000',
      minDeposit: '10',
      depositPaused: false,
      instantLiquidity: true,
      instantSlippageMaxBps: 30,
      redeem24hThresholdPctOfAum: 12.5,
      redeem48hAboveThreshold: true,
      iconDark: 'https://x.example/d.svg',
      iconLight: 'https://x.example/l.svg',
      apiEndpoint: 'https://x.example/api/usdc-main',
      description: 'Lends USDC.',
      docsUrl: 'https://x.example/docs',
      inceptionDate: '2025-11-20T00:00:00.000Z',
      strategyBrief: 'Blue chips only.',
      dataAsOf: recorded.asOf,
      createdAt: undefined,
      updatedAt: undefined,
    })

    const lite = await db.prisma.vault.findUniqueOrThrow({ where: { id: 'weth-lite' } })
    expect(lite).toMatchObject({
      status: 'paused',
      chainId: null,
      mgmtFeeBps: null,
      maxDeposit: null,
      minDeposit: null,
      depositPaused: null,
      instantLiquidity: null,
      instantSlippageMaxBps: null,
      redeem24hThresholdPctOfAum: null,
      redeem48hAboveThreshold: null,
      iconDark: null,
      iconLight: null,
      description: null,
      docsUrl: null,
      inceptionDate: null,
      strategyBrief: null,
    })

    const txs = await db.prisma.transaction.findMany({ orderBy: { id: 'asc' } })
    expect(
      txs.map((t) => ({
        ...t,
        amount: t.amount.toFixed(),
        shares: t.shares.toFixed(),
        timestamp: t.timestamp.toISOString(),
        completedAt: t.completedAt?.toISOString() ?? null,
      })),
    ).toEqual([
      {
        id: 't1',
        vaultId: 'usdc-main',
        address: ALICE.toLowerCase(),
        type: 'deposit',
        status: 'completed',
        amount: HUGE,
        shares: HUGE,
        timestamp: '2026-11-20T10:00:00.000Z',
        completedAt: '2026-11-20T10:00:30.000Z',
        txHash: `0x${Buffer.from('t1').toString('hex').padStart(64, '0')}`,
      },
      {
        id: 't2',
        vaultId: 'usdc-main',
        address: ALICE.toLowerCase(),
        type: 'redeem',
        status: 'pending',
        amount: '0.000000000000000001',
        shares: '5',
        timestamp: '2026-11-21T11:59:59.999Z',
        completedAt: null,
        txHash: `0x${Buffer.from('t2').toString('hex').padStart(64, '0')}`,
      },
      {
        id: 't3',
        vaultId: 'weth-lite',
        address: ALICE.toLowerCase(),
        type: 'withdraw',
        status: 'failed',
        amount: '2.5',
        shares: '2.4',
        timestamp: '2026-11-20T10:00:00.000Z',
        completedAt: '2026-11-20T10:00:30.000Z',
        txHash: `0x${Buffer.from('t3').toString('hex').padStart(64, '0')}`,
      },
    ])

    const snapshots = await db.prisma.compositionSnapshot.findMany({
      orderBy: { asOf: 'asc' },
      include: { allocations: { orderBy: { platform: 'asc' } } },
    })
    expect(snapshots.map((s) => ({ vaultId: s.vaultId, asOf: s.asOf.toISOString(), allocations: s.allocations.map(({ snapshotId: _, ...a }) => a) }))).toEqual([
      {
        vaultId: 'usdc-main',
        asOf: '2026-11-21T06:00:00.000Z',
        allocations: [
          { platform: 'aave', asset: 'USDC', symbol: 'USDC', pct: 60.5, apyEstPct: 4.25, icon: 'https://x.example/aave.svg' },
          { platform: 'morpho', asset: 'USDC', symbol: 'USDC', pct: 39.5, apyEstPct: 6.1, icon: 'https://x.example/morpho.svg' },
        ],
      },
      {
        vaultId: 'usdc-main',
        asOf: '2026-11-21T12:00:00.250Z', // the +01:00 offset, normalised to UTC
        allocations: [{ platform: 'aave', asset: 'USDC', symbol: 'USDC', pct: 100, apyEstPct: 4.25, icon: 'https://x.example/aave.svg' }],
      },
    ])
  })

  it('updates in place when the same ids are imported again', async () => {
    const before = await db.prisma.compositionSnapshot.findFirstOrThrow({ where: { asOf: new Date('2026-11-21T06:00:00.000Z') } })
    const doc = document()
    doc.vaults[0] = { ...fullVault, name: 'Main USDC v2', tvl: '13000000', status: 'closed', description: null }
    doc.compositions[0]!.positions = [position('compound', 'USDC', 70), position('euler', 'USDC', 30)]
    doc.transactions[1] = tx('t2', {
      type: 'redeem',
      status: 'completed',
      amount: '7.25',
      shares: '5',
      timestamp: '2026-11-21T11:59:59.999Z',
      completed_at: '2026-11-22T08:00:00Z',
    })

    expect(await importDocument(doc, db.prisma)).toEqual({ vaults: 2, compositions: 2, vault_snapshots: 0, transactions: 3 })
    // usdc-main's new live values are a new snapshot; weth-lite's unchanged ones add none.
    expect(await tableCounts()).toEqual({ vaults: 2, snapshots: 2, allocations: 3, vaultSnapshots: 3, transactions: 3 })

    const v = await db.prisma.vault.findUniqueOrThrow({ where: { id: 'usdc-main' } })
    expect([v.name, v.tvl.toFixed(), v.status, v.description]).toEqual(['Main USDC v2', '13000000', 'closed', null])
    expect(v.updatedAt.getTime()).toBeGreaterThanOrEqual(v.createdAt.getTime())

    const t2 = await db.prisma.transaction.findUniqueOrThrow({ where: { id: 't2' } })
    expect([t2.status, t2.amount.toFixed(), t2.completedAt?.toISOString()]).toEqual(['completed', '7.25', '2026-11-22T08:00:00.000Z'])

    const after = await db.prisma.compositionSnapshot.findUniqueOrThrow({
      where: { id: before.id },
      include: { allocations: { orderBy: { platform: 'asc' } } },
    })
    expect(after.allocations.map((a) => [a.platform, a.pct])).toEqual([
      ['compound', 70],
      ['euler', 30],
    ])
  })

  it('accepts compositions and transactions for vaults that exist only in the database', async () => {
    const counts = await importDocument(
      {
        compositions: [{ vault_id: 'weth-lite', as_of: '2026-11-22T00:00:00Z', positions: [] }],
        transactions: [tx('t4', { vault_id: 'weth-lite' })],
      },
      db.prisma,
    )
    expect(counts).toEqual({ vaults: 0, compositions: 1, vault_snapshots: 0, transactions: 1 })
    expect(await tableCounts()).toEqual({ vaults: 2, snapshots: 3, allocations: 3, vaultSnapshots: 3, transactions: 4 })
  })

  it('accepts an empty document', async () => {
    expect(await importDocument({}, db.prisma)).toEqual({ vaults: 0, compositions: 0, vault_snapshots: 0, transactions: 0 })
  })

  const newVault = { ...minimalVault, id: 'brand-new' }
  const manyValid = Array.from({ length: 1500 }, (_, i) => tx(`bulk-${i}`, { vault_id: 'brand-new' }))

  const rejected: [string, unknown, string][] = [
    ['a non-object document', [], 'document: must be an object'],
    ['a null document', null, 'document: must be an object'],
    ['an unknown top-level key', { vaults: [], transaction: [] }, 'transaction: is not a known field'],
    ['an unknown key that is not an identifier', { transactions: [{ ...tx('x1'), 'tx hash': '0x' }] }, 'transactions[0]["tx hash"]: is not a known field'],
    ['a list that is not an array', { vaults: {} }, 'vaults: must be an array'],
    [
      'an exponent amount',
      { transactions: [tx('x1'), tx('x2', { amount: '1e5' })] },
      'transactions[1].amount: must be a plain decimal string (digits, optional "." and fraction, no exponent)',
    ],
    ['an amount as a JSON number', { transactions: [tx('x1', { amount: 100 })] }, 'transactions[0].amount: must be a decimal string such as "1.5"'],
    ['19 fractional digits', { transactions: [tx('x1', { shares: '0.1234567890123456789' })] }, 'transactions[0].shares: has more than 18 fractional digits'],
    ['61 integer digits', { vaults: [{ ...fullVault, tvl: `1${HUGE}` }] }, 'vaults[0].tvl: has more than 60 integer digits'],
    ['a negative amount', { transactions: [tx('x1', { amount: '-1' })] }, 'transactions[0].amount: must not be negative'],
    ['a bad address', { transactions: [tx('x1', { address: '0x1234' })] }, 'transactions[0].address: must be an EVM address (0x followed by 40 hex digits)'],
    ['a wrong vault status', { vaults: [{ ...fullVault, status: 'frozen' }] }, 'vaults[0].status: must be one of "active", "paused", "closed"'],
    ['a wrong transaction type', { transactions: [tx('x1', { type: 'Deposit' })] }, 'transactions[0].type: must be one of "deposit", "withdraw", "redeem"'],
    [
      'an impossible date',
      { transactions: [tx('x1', { timestamp: '2026-02-29T00:00:00Z' })] },
      'transactions[0].timestamp: must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z"',
    ],
    [
      'a timestamp without a zone',
      { compositions: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00', positions: [] }] },
      'compositions[0].as_of: must be an RFC 3339 timestamp such as "2026-11-21T12:00:00.000Z"',
    ],
    ['a bad inception date', { vaults: [{ ...fullVault, inception_date: '2025-13-01' }] }, 'vaults[0].inception_date: must be a date in the form YYYY-MM-DD'],
    ['a missing field', { vaults: [{ ...fullVault, name: undefined }] }, 'vaults[0].name: is required'],
    ['an unknown nested field', { vaults: [{ ...fullVault, icons: { dark: null, color: 'red' } }] }, 'vaults[0].icons.color: is not a known field'],
    ['bps beyond int32', { vaults: [{ ...fullVault, perf_fee_bps: 2_147_483_648 }] }, 'vaults[0].perf_fee_bps: must be an integer from 0 to 2147483647'],
    ['a fractional bps', { vaults: [{ ...fullVault, mgmt_fee_bps: 1.5 }] }, 'vaults[0].mgmt_fee_bps: must be an integer from 0 to 2147483647'],
    [
      'pct above 100',
      { compositions: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', positions: [position('aave', 'USDC', 100.5)] }] },
      'compositions[0].positions[0].pct: must be a number from 0 to 100',
    ],
    [
      'pct as a string',
      { compositions: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', positions: [{ ...position('aave', 'USDC', 1), pct: '1' }] }] },
      'compositions[0].positions[0].pct: must be a number from 0 to 100',
    ],
    ['a duplicate transaction id', { transactions: [tx('x1'), tx('x2'), tx('x1')] }, 'transactions[2].id: duplicate id "x1" (first at transactions[0])'],
    ['a duplicate vault id', { vaults: [fullVault, { ...minimalVault, id: 'usdc-main' }] }, 'vaults[1].id: duplicate id "usdc-main" (first at vaults[0])'],
    [
      'a duplicate snapshot (same instant, different notation)',
      {
        compositions: [
          { vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', positions: [] },
          { vault_id: 'usdc-main', as_of: '2026-11-21T14:00:00.000+02:00', positions: [] },
        ],
      },
      'compositions[1].as_of: duplicate snapshot of vault "usdc-main" at 2026-11-21T12:00:00.000Z (first at compositions[0])',
    ],
    [
      'a duplicate position',
      { compositions: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', positions: [position('aave', 'USDC', 50), position('aave', 'USDC', 50)] }] },
      'compositions[0].positions[1]: duplicate platform and asset "aave"/"USDC" (first at positions[0])',
    ],
    [
      'completion before submission',
      { transactions: [tx('x1', { completed_at: '2026-11-20T09:59:59.999Z' })] },
      'transactions[0].completed_at: must not be earlier than timestamp',
    ],
    [
      'a completion time on a pending transaction',
      { transactions: [tx('x1', { status: 'pending' })] },
      'transactions[0].completed_at: must be null while status is "pending"',
    ],
    [
      'an unknown transaction status',
      { transactions: [tx('x1'), tx('x2', { type: 'redeem', status: 'fulfilled', completed_at: null })] },
      'transactions[1].status: must be one of "pending", "claimable", "completed", "failed", "cancelled"',
    ],
    [
      'a completion time on a claimable redeem',
      { transactions: [tx('x1', { type: 'redeem', status: 'claimable' })] },
      'transactions[0].completed_at: must be null while status is "claimable"',
    ],
    [
      'a claimable deposit',
      { transactions: [tx('x1', { type: 'deposit', status: 'claimable', completed_at: null })] },
      'transactions[0].status: "claimable" is only for redeems, not for a deposit',
    ],
    [
      'a completed transaction without a completion time',
      { transactions: [tx('x1', { completed_at: null })] },
      'transactions[0].completed_at: is required when status is "completed"',
    ],
    [
      'a transaction hash that is not 0x and 64 hex digits',
      { transactions: [tx('x1', { tx_hash: '0xabc' })] },
      'transactions[0].tx_hash: must be 0x followed by 64 hex digits',
    ],
    [
      'a snapshot whose pct values do not sum to 100',
      {
        compositions: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', positions: [position('aave', 'USDC', 60), position('morpho', 'USDC', 39.98)] }],
      },
      'compositions[0].positions: pct values must sum to 100 (± 0.01); they sum to 99.98',
    ],
    [
      'a duplicate vault snapshot (same instant, different notation)',
      {
        vault_snapshots: [
          { vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', share_price: '1', tvl: '1' },
          { vault_id: 'usdc-main', as_of: '2026-11-21T13:00:00.000+01:00', share_price: '1.1', tvl: '1' },
        ],
      },
      'vault_snapshots[1].as_of: duplicate snapshot of vault "usdc-main" at 2026-11-21T12:00:00.000Z (first at vault_snapshots[0])',
    ],
    [
      'a vault snapshot of an unknown vault, after valid ones',
      {
        vaults: [newVault],
        vault_snapshots: [
          { vault_id: 'brand-new', as_of: '2026-11-21T12:00:00Z', share_price: '1', tvl: '1' },
          { vault_id: 'nope', as_of: '2026-11-21T12:00:00Z', share_price: '1', tvl: '1' },
        ],
      },
      'vault_snapshots[1].vault_id: unknown vault "nope"',
    ],
    [
      'a vault snapshot without a share price',
      { vault_snapshots: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', tvl: '1' }] },
      'vault_snapshots[0].share_price: is required',
    ],
    [
      'a vault snapshot with a negative tvl',
      { vault_snapshots: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', share_price: '1', tvl: '-5' }] },
      'vault_snapshots[0].tvl: must not be negative',
    ],
    [
      'a vault snapshot with a numeric USD price',
      { vault_snapshots: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', share_price: '1', tvl: '1', base_asset_price_usd: 1 }] },
      'vault_snapshots[0].base_asset_price_usd: must be a decimal string such as "1.5"',
    ],
    [
      'a vault snapshot with an unknown field',
      { vault_snapshots: [{ vault_id: 'usdc-main', as_of: '2026-11-21T12:00:00Z', share_price: '1', tvl: '1', apy: '5' }] },
      'vault_snapshots[0].apy: is not a known field',
    ],
    ['a NUL character', { vaults: [{ ...fullVault, name: 'a\u0000b' }] }, 'vaults[0].name: must not contain NUL characters'],
    [
      'an id with a slash',
      { transactions: [tx('a/b')] },
      'transactions[0].id: must be 1-128 characters: letters, digits, ".", "_", ":" or "-", starting with a letter or digit',
    ],
    [
      'a vault in neither the document nor the database',
      { vaults: [newVault], transactions: [...manyValid, tx('x1', { vault_id: 'nope' })] },
      'transactions[1500].vault_id: unknown vault "nope"',
    ],
    [
      'an invalid row after 1500 valid ones',
      { vaults: [newVault], transactions: [...manyValid, tx('x1', { amount: '1.' })] },
      'transactions[1500].amount: must be a plain decimal string (digits, optional "." and fraction, no exponent)',
    ],
    [
      'many problems at once',
      { transactions: Array.from({ length: 7 }, (_, i) => tx(`m${i}`, { amount: 'x' })) },
      `${[0, 1, 2, 3, 4].map((i) => `transactions[${i}].amount: must be a plain decimal string (digits, optional "." and fraction, no exponent)`).join('; ')}; and 2 more problems`,
    ],
  ]

  it.each(rejected)('rejects %s with the offending path, writing nothing', async (_name, doc, message) => {
    const before = await tableCounts()
    const error = await importDocument(doc, db.prisma).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ code: 'bad_request', status: 400, message })
    expect(await tableCounts()).toEqual(before)
    expect(await db.prisma.vault.findUnique({ where: { id: 'brand-new' } })).toBeNull()
  })

  it('validates to a canonical form: plain amounts, UTC milliseconds, lowercase addresses, explicit nulls', () => {
    const doc = validateImportDocument({
      vaults: [{ ...minimalVault, tvl: '00120.500', share_price: '1.000000000000000000' }],
      transactions: [tx('c1', { address: ALICE, amount: '0.0', timestamp: '2026-11-21T12:00:00.123456-05:30', completed_at: undefined, status: 'pending' })],
    })
    expect(doc.compositions).toEqual([])
    expect(doc.vaults[0]).toMatchObject({
      tvl: '120.5',
      share_price: '1',
      mgmt_fee_bps: null,
      deposit_constraints: { max_deposit: null, min_deposit: null, paused: null },
      icons: { dark: null, light: null },
      inception_date: null,
    })
    expect(doc.transactions[0]).toMatchObject({ address: ALICE.toLowerCase(), amount: '0', timestamp: '2026-11-21T17:30:00.123Z', completed_at: null })
  })
})

describe(`vault snapshots and live values (${testBackend})`, () => {
  let db: Database
  beforeAll(async () => {
    db = await testDatabase()
  })
  afterAll(() => db?.close())

  const at = (iso: string) => ({ clock: () => new Date(iso) })
  const snap = (vault_id: string, as_of: string, share_price: string, tvl: string, base_asset_price_usd: string | null = '1') => ({
    vault_id,
    as_of,
    share_price,
    tvl,
    base_asset_price_usd,
  })
  const history = async (vaultId: string) =>
    (await db.prisma.vaultSnapshot.findMany({ where: { vaultId }, orderBy: { asOf: 'asc' } })).map((s) => [
      s.asOf.toISOString(),
      s.sharePrice.toFixed(),
      s.tvl.toFixed(),
      s.baseAssetPriceUsd?.toFixed() ?? null,
    ])
  const live = async (id: string) => {
    const v = await db.prisma.vault.findUniqueOrThrow({ where: { id } })
    return [v.sharePrice.toFixed(), v.tvl.toFixed(), v.baseAssetPriceUsd?.toFixed() ?? null]
  }
  const vault = (id: string, fields: Record<string, unknown> = {}) => ({ ...minimalVault, id, ...fields })

  it('records a vault record as a snapshot of its live values at the import time, once', async () => {
    await importDocument({ vaults: [vault('v1', { share_price: '1.25', tvl: '1000', base_asset_price_usd: '2' })] }, db.prisma, at('2026-11-01T00:00:00Z'))
    expect(await history('v1')).toEqual([['2026-11-01T00:00:00.000Z', '1.25', '1000', '2']])
    // The same record again (values written in another notation): nothing new to record.
    await importDocument({ vaults: [vault('v1', { share_price: '1.250', tvl: '1000.0', base_asset_price_usd: '2' })] }, db.prisma, at('2026-11-02T00:00:00Z'))
    expect(await history('v1')).toEqual([['2026-11-01T00:00:00.000Z', '1.25', '1000', '2']])
    // New live values: a second point.
    await importDocument({ vaults: [vault('v1', { share_price: '1.26', tvl: '1000', base_asset_price_usd: '2' })] }, db.prisma, at('2026-11-03T00:00:00Z'))
    expect(await history('v1')).toEqual([
      ['2026-11-01T00:00:00.000Z', '1.25', '1000', '2'],
      ['2026-11-03T00:00:00.000Z', '1.26', '1000', '2'],
    ])
    expect(await live('v1')).toEqual(['1.26', '1000', '2'])
  })

  it('upserts vault_snapshots on (vault_id, as_of), counts them, and moves the live values to the newest', async () => {
    await importDocument({ vaults: [vault('v2', { share_price: '1', tvl: '10' })] }, db.prisma, at('2026-11-01T00:00:00Z'))
    const counts = await importDocument(
      {
        vault_snapshots: [
          snap('v2', '2026-11-02T00:00:00Z', '1.01', '20'),
          snap('v2', '2026-11-04T00:00:00Z', '1.03', '40', null),
          snap('v2', '2026-11-03T00:00:00Z', '1.02', '30'),
        ],
      },
      db.prisma,
      at('2026-11-05T00:00:00Z'),
    )
    expect(counts).toEqual({ vaults: 0, compositions: 0, vault_snapshots: 3, transactions: 0 })
    expect(await live('v2')).toEqual(['1.03', '40', null])
    // The same key again updates in place; an older snapshot leaves the live values alone.
    expect(
      await importDocument(
        { vault_snapshots: [snap('v2', '2026-11-04T01:00:00+01:00', '1.035', '41'), snap('v2', '2026-10-01T00:00:00Z', '0.9', '5')] },
        db.prisma,
        at('2026-11-05T00:00:00Z'),
      ),
    ).toMatchObject({ vault_snapshots: 2 })
    expect(await history('v2')).toEqual([
      ['2026-10-01T00:00:00.000Z', '0.9', '5', '1'],
      ['2026-11-01T00:00:00.000Z', '1', '10', '3400'],
      ['2026-11-02T00:00:00.000Z', '1.01', '20', '1'],
      ['2026-11-03T00:00:00.000Z', '1.02', '30', '1'],
      ['2026-11-04T00:00:00.000Z', '1.035', '41', '1'],
    ])
    expect(await live('v2')).toEqual(['1.035', '41', '1'])
  })

  it('adds no wall-clock point when a record comes with snapshots ending on its values (a chain source)', async () => {
    await importDocument(
      {
        vaults: [vault('v3', { share_price: '1.5', tvl: '300', base_asset_price_usd: null })],
        vault_snapshots: [snap('v3', '2026-11-01T10:00:00Z', '1.4', '200', null), snap('v3', '2026-11-01T11:00:00Z', '1.5', '300', null)],
      },
      db.prisma,
      at('2026-11-01T11:00:07Z'),
    )
    expect(await history('v3')).toEqual([
      ['2026-11-01T10:00:00.000Z', '1.4', '200', null],
      ['2026-11-01T11:00:00.000Z', '1.5', '300', null],
    ])
    expect(await live('v3')).toEqual(['1.5', '300', null])
  })

  it('keeps the live values on the newest snapshot even when a record names older values', async () => {
    await importDocument(
      {
        vaults: [vault('v4', { share_price: '2', tvl: '50' })],
        vault_snapshots: [snap('v4', '2026-12-01T00:00:00Z', '2.2', '55')],
      },
      db.prisma,
      at('2026-11-15T00:00:00Z'),
    )
    // The record's values are a snapshot at the import time, but a newer one exists: it is the live one.
    expect(await history('v4')).toEqual([
      ['2026-11-15T00:00:00.000Z', '2', '50', '3400'],
      ['2026-12-01T00:00:00.000Z', '2.2', '55', '1'],
    ])
    expect(await live('v4')).toEqual(['2.2', '55', '1'])
    // Metadata of the record is kept all the same.
    expect((await db.prisma.vault.findUniqueOrThrow({ where: { id: 'v4' } })).name).toBe('WETH Lite')
  })

  it('stores an unknown USD price as null, in the vault and in its snapshot', async () => {
    const { base_asset_price_usd: _left_out, ...noPrice } = vault('v5')
    await importDocument({ vaults: [noPrice] }, db.prisma, at('2026-11-01T00:00:00Z'))
    expect(await live('v5')).toEqual(['1', '0', null])
    expect(await history('v5')).toEqual([['2026-11-01T00:00:00.000Z', '1', '0', null]])
    // A price becoming known is new live values: a new point.
    await importDocument({ vaults: [vault('v5', { base_asset_price_usd: '3000' })] }, db.prisma, at('2026-11-02T00:00:00Z'))
    expect(await history('v5')).toEqual([
      ['2026-11-01T00:00:00.000Z', '1', '0', null],
      ['2026-11-02T00:00:00.000Z', '1', '0', '3000'],
    ])
  })

  it('writes nothing of a document rejected for one bad snapshot', async () => {
    const before = await db.prisma.vaultSnapshot.count()
    const doc = {
      vaults: [vault('v6')],
      vault_snapshots: [
        ...Array.from({ length: 20 }, (_, i) => snap('v6', new Date(Date.UTC(2026, 0, 1, i)).toISOString(), '1', '1')),
        snap('v6', 'yesterday', '1', '1'),
      ],
    }
    await expect(importDocument(doc, db.prisma)).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/^vault_snapshots\[20\]\.as_of: /),
    })
    expect(await db.prisma.vaultSnapshot.count()).toBe(before)
    expect(await db.prisma.vault.findUnique({ where: { id: 'v6' } })).toBeNull()
  })
})
