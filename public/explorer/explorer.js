// vaultgate explorer: a small page over the GraphQL API and a few REST reads (no build step, no
// framework; ES modules: lib.js helpers, performance.js the history panel, freshness.js the header,
// wallet.js the wallet's activity and redeem queue).
// Chart.js is served by the gateway from its own node_modules, so the page works offline.
// State lives in the URL (?vault=…&wallet=…&history=…&group_by=…&timeframe=…&from=…&to=…&interval=…)
// so views can be shared.

import { fetchStatus, renderFreshness } from './freshness.js'
import { $, amount, applyTheme, bucketLabel, color, compact, day, definitionList, drawChart, el, graphql, isPhone, minute, pct } from './lib.js'
import { fetchPerformance, fetchPerformanceSeries, renderPerformance, renderPerformanceSeries, TIMEFRAMES } from './performance.js'
import { MORE_TRANSACTIONS, renderRedeems, renderTransactions, WALLET_QUERY } from './wallet.js'

const VAULT_LIST = `query ExplorerVaults($after: String, $orderBy: VaultOrder, $search: String) {
  vaults(first: 200, after: $after, orderBy: $orderBy, search: $search) {
    edges { node { id name chain status tvl tvlUsd baseAsset performance { apy7d apy30d } } }
    pageInfo { hasNextPage endCursor }
  }
}`

/** The list's sort choices: the API's orderBy (largest first), or none for its id order. */
const SORTS = ['tvlUsd', 'tvl', 'apy7d', 'apy30d', 'id']

const VAULT = `query ExplorerVault($id: ID!, $groupBy: CompositionGroupBy!, $timeframe: CompositionTimeframe, $range: SeriesRange) {
  vault(id: $id) {
    id name chain chainId caip10 symbol baseAsset status tvl sharePrice perfFeeBps mgmtFeeBps
    contract { address }
    depositConstraints { maxDeposit minDeposit paused }
    withdrawConstraints { instantLiquidity instantSlippageMaxBps }
    description docsUrl inceptionDate strategyBrief
    composition(groupBy: $groupBy) { asOf positions { platform asset symbol pct apyEstPct } }
    compositionSeries(timeframe: $timeframe, range: $range, groupBy: $groupBy) { labels interval points { t weightsPct } }
  }
}`

const VAULT_BY_ADDRESS = `query ExplorerVaultByAddress($chainId: String!, $address: String!) {
  vaultByAddress(chainId: $chainId, address: $address) { id name caip10 }
}`

/** A range's step: the REST value (the URL's, and the performance series') and GraphQL's. */
const INTERVALS = { '1h': 'PT1H', '6h': 'PT6H', '1d': 'P1D', '1w': 'P1W' }
const STEPS = { '1h': 'hour', '6h': '6 hours', '1d': 'day', '1w': 'week' }
const DATE = /^\d{4}-\d{2}-\d{2}$/

function showError(error) {
  const box = $('error')
  box.textContent = error ? String(error.message ?? error) : ''
  box.hidden = !error
}

const bps = (n) => (n === null || n === undefined ? '—' : `${(n / 100).toFixed(2)}%`)
const state = {
  vault: null,
  wallet: '',
  groupBy: 'platform',
  timeframe: 'P30D',
  /** The performance charts' timeframe, as the REST series takes it. */
  history: '30d',
  baseAsset: '',
  sort: 'tvlUsd',
  search: '',
  /** A custom range instead of the timeframes, for every chart: {from, to, interval} as the date inputs give them (to inclusive, '' for now). */
  range: null,
  /** The wallet's activity: 'all' vaults or the shown 'vault'. */
  activity: 'all',
}

/** The range as the API takes it: whole UTC days, `to` the midnight after the last day asked (the API's `to` is exclusive). */
function rangeArgs() {
  const { from, to, interval } = state.range
  const next = to ? new Date(Date.parse(`${to}T00:00:00.000Z`) + 86_400_000).toISOString() : null
  return { from: `${from}T00:00:00.000Z`, to: next, interval: interval || null }
}

function readUrl() {
  const q = new URLSearchParams(location.search)
  state.vault = q.get('vault')
  state.wallet = q.get('wallet') ?? ''
  if (['platform', 'asset'].includes(q.get('group_by'))) state.groupBy = q.get('group_by')
  if (['P7D', 'P30D', 'P1Y', 'ALL'].includes(q.get('timeframe'))) state.timeframe = q.get('timeframe')
  if (TIMEFRAMES.includes(q.get('history'))) state.history = q.get('history')
  if (SORTS.includes(q.get('sort'))) state.sort = q.get('sort')
  state.search = q.get('q') ?? ''
  if (DATE.test(q.get('from') ?? ''))
    state.range = {
      from: q.get('from'),
      to: DATE.test(q.get('to') ?? '') ? q.get('to') : '',
      interval: Object.hasOwn(INTERVALS, q.get('interval') ?? '') ? q.get('interval') : '',
    }
  if (q.get('activity') === 'vault') state.activity = 'vault'
}

function writeUrl() {
  const q = new URLSearchParams()
  if (state.vault) q.set('vault', state.vault)
  if (state.wallet) q.set('wallet', state.wallet)
  if (state.history !== '30d') q.set('history', state.history)
  if (state.sort !== 'tvlUsd') q.set('sort', state.sort)
  if (state.search) q.set('q', state.search)
  if (state.groupBy !== 'platform') q.set('group_by', state.groupBy)
  if (state.timeframe !== 'P30D') q.set('timeframe', state.timeframe)
  if (state.range) {
    q.set('from', state.range.from)
    if (state.range.to) q.set('to', state.range.to)
    if (state.range.interval) q.set('interval', state.range.interval)
  }
  if (state.activity !== 'all') q.set('activity', state.activity)
  history.replaceState(null, '', q.size ? `?${q}` : location.pathname)
}

// ---------------------------------------------------------------------------------------------
// Vault list

/** The list's TVL: the sorted-by figure first (USD unless sorting by base-asset TVL), the other below. */
function tvlCell(node) {
  const usd = node.tvlUsd === null ? 'no USD price' : `$${compact(node.tvlUsd)}`
  const base = `${compact(node.tvl)} ${node.baseAsset}`
  const [first, second] = state.sort === 'tvl' ? [base, usd] : [usd, base]
  return [first, el('div', { class: 'muted small' }, second)]
}

let vaultCursor = null
let listRequest = 0

/** The vault list in the chosen order (the API sorts: the list pages), filtered by the search box. */
async function loadVaults(more = false) {
  const request = ++listRequest
  const orderBy = state.sort === 'id' ? null : { field: state.sort, direction: 'desc' }
  const data = await graphql(VAULT_LIST, { after: more ? vaultCursor : null, orderBy, search: state.search || null })
  if (request !== listRequest) return []
  const apyKey = state.sort === 'apy30d' ? 'apy30d' : 'apy7d'
  $('apy-heading').textContent = apyKey === 'apy30d' ? 'APY 30d' : 'APY 7d'
  const rows = data.vaults.edges.map(({ node }) =>
    el(
      'tr',
      { 'data-vault': node.id, class: node.id === state.vault ? 'selected' : '' },
      el(
        'td',
        {},
        el('a', { href: `?vault=${encodeURIComponent(node.id)}` }, node.name),
        el('div', { class: 'muted small' }, `${node.chain} · ${node.status}`),
      ),
      el('td', { class: 'num', title: `${amount(node.tvl)} ${node.baseAsset}${node.tvlUsd === null ? '' : ` ≈ $${amount(node.tvlUsd)}`}` }, ...tvlCell(node)),
      el('td', { class: 'num apy' }, pct(node.performance[apyKey])),
    ),
  )
  if (!more && !rows.length) rows.push(el('tr', {}, el('td', { colSpan: 3, class: 'muted' }, state.search ? 'No vault matches.' : 'No vaults yet.')))
  if (more) $('vaults').append(...rows)
  else $('vaults').replaceChildren(...rows)
  vaultCursor = data.vaults.pageInfo.endCursor
  $('more-vaults').hidden = !data.vaults.pageInfo.hasNextPage
  return data.vaults.edges.map((e) => e.node.id)
}

// ---------------------------------------------------------------------------------------------
// One vault: metadata and charts

function renderMeta(v) {
  $('vault-name').textContent = v.name
  $('vault-description').textContent = v.description ?? ''
  definitionList($('vault-meta'), [
    ['Id', v.id],
    ['Status', el('span', { class: `badge ${v.status}` }, v.status)],
    ['Chain', v.chainId ? `${v.chain} (${v.chainId})` : v.chain],
    ['TVL', `${amount(v.tvl)} ${v.baseAsset}`],
    ['Share price', `${amount(v.sharePrice, 6)} ${v.baseAsset}`],
    ['Share', v.symbol],
    ['Fees', `${bps(v.perfFeeBps)} performance, ${bps(v.mgmtFeeBps)} management`],
    ['Deposits', v.depositConstraints.paused ? 'paused' : `min ${amount(v.depositConstraints.minDeposit)}, max ${amount(v.depositConstraints.maxDeposit)}`],
    [
      'Instant withdrawal',
      v.withdrawConstraints.instantLiquidity === null
        ? '—'
        : v.withdrawConstraints.instantLiquidity
          ? `yes (≤ ${bps(v.withdrawConstraints.instantSlippageMaxBps)} slippage)`
          : 'no',
    ],
    ['Since', day(v.inceptionDate)],
    ['Contract', el('code', { title: v.caip10 ? 'CAIP-10: chain and EIP-55 checksummed address' : '' }, v.caip10 ?? v.contract.address)],
  ])
}

function renderComposition(v) {
  const composition = v.composition
  const key = state.groupBy
  $('group-heading').textContent = key === 'platform' ? 'Platform' : 'Asset'
  $('composition-as-of').textContent = composition?.asOf ? `as of ${minute(composition.asOf)} UTC` : '(no snapshot yet)'
  const positions = composition?.positions ?? []
  $('positions').replaceChildren(
    ...positions.map((p, i) =>
      el(
        'tr',
        {},
        el('td', {}, el('span', { class: 'swatch', style: `background:${color(i)}` }), p[key]),
        el('td', { class: 'num' }, pct(p.pct)),
        el('td', { class: 'num' }, pct(p.apyEstPct)),
      ),
    ),
  )
  const data = {
    labels: positions.map((p) => p[key]),
    datasets: [
      {
        label: key === 'platform' ? 'Share by platform' : 'Share by asset',
        data: positions.map((p) => p.pct),
        backgroundColor: positions.map((_, i) => color(i)),
      },
    ],
  }
  drawChart($('composition-chart'), {
    type: 'doughnut',
    data,
    options: {
      maintainAspectRatio: false,
      animation: false,
      // Beside the doughnut on a wide screen, under it on a phone (also when the window is resized).
      onResize: (chart) => {
        chart.options.plugins.legend.position = isPhone() ? 'bottom' : 'right'
      },
      plugins: {
        legend: { position: isPhone() ? 'bottom' : 'right' },
        tooltip: { callbacks: { label: (c) => ` ${c.label}: ${pct(c.parsed)}` } },
      },
    },
  })
}

function renderSeries(v) {
  const series = v.compositionSeries
  const label = bucketLabel(
    series.interval ? series.interval === 'PT1H' || series.interval === 'PT6H' : state.timeframe === 'P7D' || state.timeframe === 'P30D',
  )
  const labels = series.points.map((p) => label(p.t))
  const datasets = series.labels.map((label, i) => ({
    label,
    data: series.points.map((p) => p.weightsPct[i]),
    borderColor: color(i),
    backgroundColor: color(i, 0.55),
    fill: i === 0 ? 'origin' : '-1',
    pointRadius: 0,
    borderWidth: 1,
    tension: 0,
  }))
  $('series-empty').hidden = series.points.length > 0
  drawChart($('series-chart'), {
    type: 'line',
    data: { labels, datasets },
    options: {
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: { ticks: { maxTicksLimit: 7, maxRotation: 0, autoSkipPadding: 16 } },
        y: { stacked: true, min: 0, max: 100, ticks: { callback: (n) => `${n}%` } },
      },
      plugins: { legend: { position: 'bottom' }, tooltip: { callbacks: { label: (c) => ` ${c.dataset.label}: ${pct(c.parsed.y)}` } } },
    },
  })
}

// Answers can arrive out of order when controls change quickly: only the latest request renders.
let vaultRequest = 0
let historyRequest = 0
let walletRequest = 0

/** Metadata and composition (GraphQL); answers the vault, or null when a newer request took over. */
async function showVault() {
  for (const row of document.querySelectorAll('#vaults tr')) row.classList.toggle('selected', row.dataset.vault === state.vault)
  const request = ++vaultRequest
  const series = state.range
    ? { timeframe: null, range: { ...rangeArgs(), interval: INTERVALS[state.range.interval] ?? null } }
    : { timeframe: state.timeframe, range: null }
  $('timeframe').value = state.range ? 'RANGE' : state.timeframe
  const data = await graphql(VAULT, { id: state.vault, groupBy: state.groupBy, ...series })
  if (request !== vaultRequest) return null
  if (!data.vault) throw new Error(`Vault "${state.vault}" was not found.`)
  state.baseAsset = data.vault.baseAsset
  renderMeta(data.vault)
  renderComposition(data.vault)
  renderSeries(data.vault)
  document.body.dataset.vault = data.vault.id
  return data.vault
}

/**
 * The performance panel (REST, decisions §9): the APY windows unless `summary` is false (only the
 * timeframe changed), and the series. `vault` is showVault's pending answer when both load at once
 * (the charts name the base asset).
 */
async function showHistory({ vault = null, summary = true } = {}) {
  const request = ++historyRequest
  for (const b of document.querySelectorAll('#history-timeframe button'))
    b.setAttribute('aria-pressed', String(!state.range && b.dataset.timeframe === state.history))
  const range = state.range && rangeArgs()
  const reads = Promise.all([summary ? fetchPerformance(state.vault) : null, fetchPerformanceSeries(state.vault, state.history, range)])
  await vault
  // A failed history read is shown in its panel and leaves the rest of the page working (a vault
  // that does not exist is reported by showVault).
  const [perf, series] = await reads.catch((error) => [error, null])
  if (request !== historyRequest) return
  $('performance-error').hidden = !(perf instanceof Error)
  if (perf instanceof Error) {
    $('performance-error').textContent = `Performance history unavailable: ${perf.message}`
    return
  }
  if (perf) renderPerformance(perf, state.baseAsset)
  renderPerformanceSeries(series, state.baseAsset)
  $('range-summary').hidden = !range
  if (range)
    $('range-summary').textContent =
      `${series.points.length} points, one per ${STEPS[series.interval]}, from ${minute(series.from)} to ${minute(series.to)} UTC`
  document.body.dataset.history = `${state.vault} ${series.timeframe ?? `${series.from}/${series.to}/${series.interval}`}`
}

/**
 * Both series (composition and performance) after the range or timeframe changed. A range the API
 * refuses fails both reads with the same sentence: the performance panel shows it, once.
 */
async function showSeries() {
  const [vault, history] = await Promise.allSettled([showVault(), showHistory({ summary: false })])
  if (history.status === 'rejected') throw history.reason
  if (vault.status === 'rejected' && $('performance-error').hidden) throw vault.reason
}

/** A vault's whole view: metadata, composition and history load in parallel, and the header's freshness with them. */
async function showVaultAndHistory() {
  const vault = showVault()
  await Promise.all([vault, showHistory({ vault }), showFreshness()])
}

// ---------------------------------------------------------------------------------------------
// Wallet lookup

let transactionsCursor = null

/** Position in the shown vault, redeem queue across vaults, and the first page of the wallet's activity. */
async function showWallet() {
  const address = state.wallet.trim()
  if (!address || !state.vault) return
  const request = ++walletRequest
  const txVault = state.activity === 'vault' ? state.vault : null
  const { user } = await graphql(WALLET_QUERY, { address, vaultId: state.vault, txVault })
  if (request !== walletRequest) return
  state.wallet = user.address
  $('wallet-address').value = user.address
  writeUrl()
  const p = user.position
  definitionList(
    $('position'),
    p
      ? [
          ['Shares', amount(p.shareBalance, 6)],
          ['Value', `$${amount(p.positionValueUsd)}`],
          ['Deposited', amount(p.totalDeposits)],
          ['Earned', amount(p.allTimeEarned)],
          ['First deposit', day(p.firstDepositAt)],
        ]
      : [['Position', 'none in this vault']],
  )
  renderRedeems(user.pendingRedeems, user.address)
  transactionsCursor = renderTransactions(user.transactions, { wallet: user.address, acrossVaults: txVault === null })
  $('wallet-result').hidden = false
  document.body.dataset.wallet = user.address
}

/** The next, older page of the wallet's activity, under the rows shown. */
async function moreTransactions() {
  const request = walletRequest
  const txVault = state.activity === 'vault' ? state.vault : null
  const { user } = await graphql(MORE_TRANSACTIONS, { address: state.wallet, txVault, after: transactionsCursor })
  if (request !== walletRequest) return
  transactionsCursor = renderTransactions(user.transactions, { wallet: user.address, acrossVaults: txVault === null, append: true })
}

/** A vault by its chain and contract address (GraphQL vaultByAddress): shown when found, said so when not. */
async function findByAddress() {
  const chainId = $('lookup-chain').value.trim()
  const address = $('lookup-address').value.trim()
  const say = (text, found = false) => {
    $('lookup-result').textContent = text
    $('lookup-result').classList.toggle('negative', !found)
    $('lookup-result').hidden = false
  }
  if (!chainId || !address) return say('Enter a chain id and a contract address.')
  let vault
  try {
    ;({ vaultByAddress: vault } = await graphql(VAULT_BY_ADDRESS, { chainId, address }))
  } catch (error) {
    return say(error.message)
  }
  if (!vault) return say(`No vault at ${address} on chain ${chainId}.`)
  say(`${vault.name}: ${vault.caip10 ?? vault.id}`, true)
  state.vault = vault.id
  writeUrl()
  await showVaultAndHistory()
  await showWallet()
}

// ---------------------------------------------------------------------------------------------

function run(work) {
  showError(null)
  return work().catch(showError)
}

function wire() {
  $('group-by').value = state.groupBy
  $('timeframe').value = state.timeframe
  $('wallet-address').value = state.wallet
  $('group-by').addEventListener('change', (e) => {
    state.groupBy = e.target.value
    writeUrl()
    run(showVault)
  })
  $('timeframe').addEventListener('change', (e) => {
    state.timeframe = e.target.value
    // A timeframe ends a custom range, on every chart.
    const hadRange = state.range !== null
    state.range = null
    writeUrl()
    run(hadRange ? showSeries : showVault)
  })
  const select = (id) => {
    state.vault = id
    writeUrl()
    run(async () => {
      await showVaultAndHistory()
      await showWallet()
    })
  }
  $('vaults').addEventListener('click', (e) => {
    const row = e.target.closest('tr[data-vault]')
    if (!row) return
    e.preventDefault()
    select(row.dataset.vault)
  })
  // A vault named in the wallet's redeems or activity (a plain click: other clicks open the href).
  $('wallet-result').addEventListener('click', (e) => {
    const link = e.target.closest('a[data-vault]')
    if (!link || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return
    e.preventDefault()
    select(link.dataset.vault)
  })
  $('history-timeframe').addEventListener('click', (e) => {
    const button = e.target.closest('button[data-timeframe]')
    if (!button || (button.dataset.timeframe === state.history && !state.range)) return
    state.history = button.dataset.timeframe
    const hadRange = state.range !== null
    state.range = null
    writeUrl()
    run(hadRange ? showSeries : () => showHistory({ summary: false }))
  })
  if (state.range) {
    $('range-from').value = state.range.from
    $('range-to').value = state.range.to
    $('range-interval').value = state.range.interval
  }
  $('range-form').addEventListener('submit', (e) => {
    e.preventDefault()
    const from = $('range-from').value
    if (!from) {
      $('performance-error').textContent = 'Pick the first day of the range.'
      $('performance-error').hidden = false
      return
    }
    state.range = { from, to: $('range-to').value, interval: $('range-interval').value }
    writeUrl()
    run(showSeries)
  })
  $('range-clear').addEventListener('click', () => {
    if (!state.range) return
    state.range = null
    for (const id of ['range-from', 'range-to', 'range-interval']) $(id).value = ''
    writeUrl()
    run(showSeries)
  })
  $('lookup-form').addEventListener('submit', (e) => {
    e.preventDefault()
    run(findByAddress)
  })
  $('activity').value = state.activity
  $('activity').addEventListener('change', (e) => {
    state.activity = e.target.value
    writeUrl()
    run(showWallet)
  })
  $('more-transactions').addEventListener('click', () => run(moreTransactions))
  $('more-vaults').addEventListener('click', () => run(() => loadVaults(true)))
  $('vault-sort').value = state.sort
  $('vault-search').value = state.search
  $('vault-sort').addEventListener('change', (e) => {
    state.sort = e.target.value
    writeUrl()
    run(() => loadVaults())
  })
  let typing = null
  $('vault-search').addEventListener('input', (e) => {
    clearTimeout(typing)
    typing = setTimeout(() => {
      state.search = e.target.value.trim()
      writeUrl()
      run(() => loadVaults())
    }, 250)
  })
  $('wallet-form').addEventListener('submit', (e) => {
    e.preventDefault()
    state.wallet = $('wallet-address').value.trim()
    writeUrl()
    run(showWallet)
  })
}

// For other modules (a live-update module can import these and re-render on a push).
export { loadVaults, run, showFreshness, showHistory, showVault, showVaultAndHistory, showWallet, state }

/** The header's freshness line; the page works without it (an older gateway has no /v1/status). */
async function showFreshness() {
  try {
    renderFreshness(await fetchStatus())
  } catch {
    $('freshness').hidden = true
  }
}

readUrl()
applyTheme()
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', applyTheme)
wire()
run(async () => {
  const ids = await loadVaults()
  state.vault ??= ids[0] ?? null
  if (!state.vault) {
    $('vault-name').textContent = 'No vaults yet'
    await showFreshness()
    return
  }
  await showVaultAndHistory()
  await showWallet()
}).finally(() => {
  document.body.dataset.ready = 'true'
})
