// vaultgate explorer: a small page over the GraphQL API (no build step, no framework).
// Chart.js is served by the gateway from its own node_modules, so the page works offline.
// State lives in the URL (?vault=…&wallet=…&group_by=…&timeframe=…) so views can be shared.

const $ = (id) => document.getElementById(id)
const PALETTE = ['#2563eb', '#f59e0b', '#10b981', '#ef4444', '#8b5cf6', '#06b6d4', '#f97316', '#84cc16', '#ec4899', '#64748b']
const color = (i, alpha = 1) => {
  const hex = PALETTE[i % PALETTE.length]
  const [r, g, b] = [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16))
  return `rgba(${r}, ${g}, ${b}, ${alpha})`
}

const VAULT_LIST = `query ExplorerVaults($after: String) {
  vaults(first: 200, after: $after) { edges { node { id name chain status tvl baseAsset } } pageInfo { hasNextPage endCursor } }
}`

const VAULT = `query ExplorerVault($id: ID!, $groupBy: CompositionGroupBy!, $timeframe: CompositionTimeframe!) {
  vault(id: $id) {
    id name chain chainId symbol baseAsset status tvl sharePrice perfFeeBps mgmtFeeBps
    contract { address }
    depositConstraints { maxDeposit minDeposit paused }
    withdrawConstraints { instantLiquidity instantSlippageMaxBps }
    description docsUrl inceptionDate strategyBrief
    composition(groupBy: $groupBy) { asOf positions { platform asset symbol pct apyEstPct } }
    compositionSeries(timeframe: $timeframe, groupBy: $groupBy) { labels points { t weightsPct } }
  }
}`

const WALLET = `query ExplorerWallet($address: String!, $vaultId: ID!) {
  user(address: $address) {
    address
    position(vaultId: $vaultId) { shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned firstDepositAt }
    pendingRedeems { totalPending averageRedeemDelay pendingRedeems { vaultId amount } }
    transactions(vaultId: $vaultId, first: 25) { edges { node { id type status amount timestamp txHash } } pageInfo { hasNextPage } }
  }
}`

async function graphql(query, variables) {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify({ query, variables }),
  })
  const body = await res.json().catch(() => ({ errors: [{ message: `HTTP ${res.status}` }] }))
  if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join(' '))
  return body.data
}

function showError(error) {
  const box = $('error')
  box.textContent = error ? String(error.message ?? error) : ''
  box.hidden = !error
}

/** Amounts arrive as exact decimal strings: group and trim them as text, never through a float. */
function amount(text, maxFraction = 2) {
  if (text === null || text === undefined) return '—'
  const negative = text.startsWith('-')
  const [int, frac = ''] = (negative ? text.slice(1) : text).split('.')
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  const shown = frac.slice(0, maxFraction).replace(/0+$/, '')
  return `${negative ? '-' : ''}${grouped}${shown ? `.${shown}` : ''}`
}

const pct = (n) => `${n.toFixed(2)}%`
const bps = (n) => (n === null || n === undefined ? '—' : `${(n / 100).toFixed(2)}%`)
const day = (iso) => (iso ? iso.slice(0, 10) : '—')
const minute = (iso) => iso.slice(0, 16).replace('T', ' ')

/**
 * Chart colours come from the page's CSS variables, so the charts follow prefers-color-scheme
 * (explorer.css) and switch with it while the page is open.
 */
function applyTheme() {
  const css = getComputedStyle(document.documentElement)
  const v = (name) => css.getPropertyValue(name).trim()
  const [ink, line] = [v('--muted'), v('--line')]
  Chart.defaults.color = ink
  Chart.defaults.borderColor = line
  Chart.defaults.elements.arc.borderColor = v('--panel')
  // A drawn chart has copied the scale defaults into its own options: set them there too.
  for (const chart of Object.values(Chart.instances)) {
    for (const scale of Object.values(chart.config.options.scales ?? {})) {
      scale.ticks = { ...scale.ticks, color: ink }
      scale.grid = { ...scale.grid, color: line }
      scale.border = { ...scale.border, color: line }
      scale.title = { ...scale.title, color: ink }
    }
    chart.update()
  }
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v
    else if (k.startsWith('data-')) node.setAttribute(k, v)
    else node[k] = v
  }
  for (const c of children) node.append(c)
  return node
}

function definitionList(target, rows) {
  target.replaceChildren(...rows.flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value ?? '—')]))
}

const state = {
  vault: null,
  wallet: '',
  groupBy: 'platform',
  timeframe: 'P30D',
}

function readUrl() {
  const q = new URLSearchParams(location.search)
  state.vault = q.get('vault')
  state.wallet = q.get('wallet') ?? ''
  if (['platform', 'asset'].includes(q.get('group_by'))) state.groupBy = q.get('group_by')
  if (['P7D', 'P30D', 'P1Y', 'ALL'].includes(q.get('timeframe'))) state.timeframe = q.get('timeframe')
}

function writeUrl() {
  const q = new URLSearchParams()
  if (state.vault) q.set('vault', state.vault)
  if (state.wallet) q.set('wallet', state.wallet)
  if (state.groupBy !== 'platform') q.set('group_by', state.groupBy)
  if (state.timeframe !== 'P30D') q.set('timeframe', state.timeframe)
  history.replaceState(null, '', q.size ? `?${q}` : location.pathname)
}

// ---------------------------------------------------------------------------------------------
// Vault list

let vaultCursor = null

async function loadVaults(more = false) {
  const data = await graphql(VAULT_LIST, { after: more ? vaultCursor : null })
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
      el('td', { class: 'num' }, `${amount(node.tvl, 0)} ${node.baseAsset}`),
    ),
  )
  if (more) $('vaults').append(...rows)
  else $('vaults').replaceChildren(...rows)
  vaultCursor = data.vaults.pageInfo.endCursor
  $('more-vaults').hidden = !data.vaults.pageInfo.hasNextPage
  return data.vaults.edges.map((e) => e.node.id)
}

// ---------------------------------------------------------------------------------------------
// One vault: metadata and charts

let compositionChart = null
let seriesChart = null

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
    ['Contract', el('code', {}, v.contract.address)],
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
  if (compositionChart) {
    compositionChart.data = data
    compositionChart.update()
  } else {
    compositionChart = new Chart($('composition-chart'), {
      type: 'doughnut',
      data,
      options: {
        maintainAspectRatio: false,
        animation: false,
        plugins: {
          legend: { position: matchMedia('(max-width: 600px)').matches ? 'bottom' : 'right' },
          tooltip: { callbacks: { label: (c) => ` ${c.label}: ${pct(c.parsed)}` } },
        },
      },
    })
  }
}

function renderSeries(v) {
  const series = v.compositionSeries
  const hourly = state.timeframe === 'P7D' || state.timeframe === 'P30D'
  // "11-14 13:00" for hourly buckets, the date for daily and weekly ones.
  const labels = series.points.map((p) => (hourly ? minute(p.t).slice(5) : day(p.t)))
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
  if (seriesChart) {
    seriesChart.data = { labels, datasets }
    seriesChart.update()
    return
  }
  seriesChart = new Chart($('series-chart'), {
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
let walletRequest = 0

async function showVault() {
  for (const row of document.querySelectorAll('#vaults tr')) row.classList.toggle('selected', row.dataset.vault === state.vault)
  const request = ++vaultRequest
  const data = await graphql(VAULT, { id: state.vault, groupBy: state.groupBy, timeframe: state.timeframe })
  if (request !== vaultRequest) return
  if (!data.vault) throw new Error(`Vault "${state.vault}" was not found.`)
  renderMeta(data.vault)
  renderComposition(data.vault)
  renderSeries(data.vault)
  document.body.dataset.vault = data.vault.id
}

// ---------------------------------------------------------------------------------------------
// Wallet lookup

async function showWallet() {
  const address = state.wallet.trim()
  if (!address || !state.vault) return
  const request = ++walletRequest
  const { user } = await graphql(WALLET, { address, vaultId: state.vault })
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
  const r = user.pendingRedeems
  const delay = r.averageRedeemDelay > 0 ? `; recent redeems took ${(r.averageRedeemDelay / 3600).toFixed(1)} h on average` : ''
  $('pending').textContent = r.pendingRedeems.length
    ? `${r.pendingRedeems.length} pending redeem(s) across vaults, ${amount(r.totalPending)} in total${delay}.`
    : 'No pending redeems.'
  const rows = user.transactions.edges.map(({ node: t }) =>
    el(
      'tr',
      { 'data-tx': t.id },
      el('td', {}, minute(t.timestamp)),
      el('td', {}, t.type),
      el('td', {}, t.status),
      el('td', { class: 'num' }, amount(t.amount)),
      el('td', {}, el('code', {}, `${t.txHash.slice(0, 10)}…`)),
    ),
  )
  if (!rows.length) rows.push(el('tr', {}, el('td', { colSpan: 5, class: 'muted' }, 'No transactions in this vault.')))
  if (user.transactions.pageInfo.hasNextPage)
    rows.push(el('tr', {}, el('td', { colSpan: 5, class: 'muted' }, 'Latest 25 shown; the API pages through the rest (REST cursor, GraphQL after).')))
  $('transactions').replaceChildren(...rows)
  $('wallet-result').hidden = false
  document.body.dataset.wallet = user.address
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
    writeUrl()
    run(showVault)
  })
  $('vaults').addEventListener('click', (e) => {
    const row = e.target.closest('tr[data-vault]')
    if (!row) return
    e.preventDefault()
    state.vault = row.dataset.vault
    writeUrl()
    run(async () => {
      await showVault()
      await showWallet()
    })
  })
  $('more-vaults').addEventListener('click', () => run(() => loadVaults(true)))
  $('wallet-form').addEventListener('submit', (e) => {
    e.preventDefault()
    state.wallet = $('wallet-address').value.trim()
    writeUrl()
    run(showWallet)
  })
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
    return
  }
  await showVault()
  await showWallet()
}).finally(() => {
  document.body.dataset.ready = 'true'
})
