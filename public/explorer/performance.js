// The performance panel: realized APY window cards and the share-price, TVL and APY charts over a
// timeframe or any range, from the REST reads of decisions §9 and §14 (GET /v1/vaults/{id}/performance
// and /performance/series?timeframe= or ?from=&to=&interval=). Render functions take the API's
// bodies, so a live update can call them with fresh answers.
import { $, amount, bucketLabel, color, drawChart, el, minute, pct, rest } from './lib.js'

export const TIMEFRAMES = ['7d', '30d', '1y', 'all']

const WINDOWS = [
  ['1d', '1 day'],
  ['7d', '7 days'],
  ['30d', '30 days'],
  ['90d', '90 days'],
  ['1y', '1 year'],
  ['inception', 'inception'],
]
const SPIKE = '#ef4444'

const vaultPath = (id) => `/vaults/${encodeURIComponent(id)}/performance`
export const fetchPerformance = (vaultId) => rest(vaultPath(vaultId))
/** A timeframe's series, or with `range` ({from, to, interval}; to and interval may be null) that range's. */
export function fetchPerformanceSeries(vaultId, timeframe, range = null) {
  const q = new URLSearchParams()
  if (!range) q.set('timeframe', timeframe)
  else for (const [k, v] of Object.entries(range)) if (v) q.set(k, v)
  return rest(`${vaultPath(vaultId)}/series?${q}`)
}

/** Why a window shows "—": the API answers null (never 0) when the history does not reach back. */
const whyNull = (key, label) =>
  key === 'inception'
    ? 'No APY since inception yet: the first snapshot is less than a day before the newest one.'
    : `No ${label} APY: this vault's share-price history does not reach back ${label} before its newest snapshot, so there is nothing to compare with (the API answers null, never 0).`

/** The APY window cards and the panel's headline (time of the newest snapshot, USD TVL). */
export function renderPerformance(perf, baseAsset) {
  $('performance-as-of').textContent = perf.as_of ? `as of ${minute(perf.as_of)} UTC` : '(no snapshot yet)'
  $('performance-tvl').textContent =
    perf.tvl === null ? '' : `TVL ${amount(perf.tvl, 0)} ${baseAsset}${perf.tvl_usd === null ? '' : ` ≈ $${amount(perf.tvl_usd, 0)}`}`
  const cards = WINDOWS.map(([key, label]) => {
    const value = perf.apy_pct?.[key] ?? null
    const title =
      value === null
        ? whyNull(key, label)
        : `Realized APY over ${key === 'inception' ? 'the whole history' : `the last ${label}`}, from share prices (net of fees).`
    return el(
      'li',
      { class: value === null ? 'card empty' : 'card', 'data-window': key, title },
      el('span', { class: 'card-label' }, key === 'inception' ? 'Since inception' : `${key} APY`),
      el('strong', { class: value !== null && value < 0 ? 'negative' : '' }, pct(value)),
    )
  })
  $('apy-cards').replaceChildren(...cards)
  $('apy-null-note').hidden = !cards.some((c) => c.classList.contains('empty'))
}

// Time labels are about 70 px wide: one per ~110 px of chart, so a narrow chart (a phone, or the TVL
// chart with its second axis) does not print them over each other.
const timeTicks = (width) => Math.max(2, Math.min(6, Math.floor(width / 110)))

const commonOptions = (canvas, scales, tooltipLabel) => ({
  maintainAspectRatio: false,
  animation: false,
  interaction: { mode: 'index', intersect: false },
  onResize: (chart, size) => {
    chart.options.scales.x.ticks.maxTicksLimit = timeTicks(size.width)
  },
  scales: { x: { ticks: { maxTicksLimit: timeTicks(canvas.parentElement.clientWidth), maxRotation: 0, autoSkipPadding: 16 } }, ...scales },
  plugins: { legend: { position: 'bottom', labels: { boxWidth: 12 } }, tooltip: { callbacks: { label: tooltipLabel } } },
})
const line = (label, data, i, extra = {}) => ({
  label,
  data,
  borderColor: color(i),
  backgroundColor: color(i, 0.15),
  pointRadius: 0,
  borderWidth: 1.5,
  ...extra,
})
const num = (s) => (s === null || s === undefined ? null : Number(s))

/** The three charts for one series body. Flagged points are drawn as markers beside the line, not on it. */
export function renderPerformanceSeries(series, baseAsset) {
  const points = series.points
  const label = bucketLabel(series.interval ? series.interval === '1h' || series.interval === '6h' : series.timeframe === '7d' || series.timeframe === '30d')
  const labels = points.map((p) => label(p.t))
  const spike = points.map((p) => (p.flags ?? []).includes('spike'))
  $('performance-empty').hidden = points.length > 0
  $('spike-note').hidden = !spike.some(Boolean)

  // Share price: the line skips spikes, as the APY windows do, so a one-off outlier does not flatten
  // the scale; the spike markers sit at the edge of the scale and their tooltip shows the real price.
  const prices = points.map((p, i) => (spike[i] ? null : num(p.share_price)))
  const kept = prices.filter((n) => n !== null)
  const [lo, hi] = kept.length ? [Math.min(...kept), Math.max(...kept)] : [0, 1]
  const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.001 || 1
  const datasets = [line(`Share price (${baseAsset})`, prices, 0, { spanGaps: true, fill: false })]
  if (spike.some(Boolean))
    datasets.push({
      label: 'Spike (left out of APY)',
      data: points.map((p, i) => (spike[i] ? Math.min(Math.max(num(p.share_price), lo - pad), hi + pad) : null)),
      showLine: false,
      pointStyle: 'triangle',
      pointRadius: 6,
      pointHoverRadius: 8,
      borderColor: SPIKE,
      backgroundColor: SPIKE,
    })
  drawChart($('share-price-chart'), {
    type: 'line',
    data: { labels, datasets },
    options: commonOptions($('share-price-chart'), { y: { ticks: { callback: (n) => Number(n).toPrecision(6) } } }, (c) =>
      c.datasetIndex === 1 ? ` spike: ${points[c.dataIndex].share_price} ${baseAsset}` : ` ${points[c.dataIndex].share_price} ${baseAsset}`,
    ),
  })

  // TVL in the base asset (left axis) and in USD (right axis) when the USD price is known.
  const usd = points.map((p) => num(p.tvl_usd))
  const tvlSets = [
    line(
      `TVL (${baseAsset})`,
      points.map((p) => num(p.tvl)),
      2,
      { fill: 'origin', yAxisID: 'y' },
    ),
  ]
  if (usd.some((n) => n !== null)) tvlSets.push(line('TVL (USD)', usd, 1, { borderDash: [5, 4], yAxisID: 'y1' }))
  const compact = (n) => Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 2 }).format(n)
  drawChart($('tvl-chart'), {
    type: 'line',
    data: { labels, datasets: tvlSets },
    options: commonOptions(
      $('tvl-chart'),
      {
        y: { beginAtZero: true, position: 'left', ticks: { callback: compact } },
        y1: {
          beginAtZero: true,
          position: 'right',
          display: usd.some((n) => n !== null),
          grid: { drawOnChartArea: false },
          ticks: { callback: (n) => `$${compact(n)}` },
        },
      },
      (c) => (c.datasetIndex === 0 ? ` ${amount(points[c.dataIndex].tvl)} ${baseAsset}` : ` $${amount(points[c.dataIndex].tvl_usd)}`),
    ),
  })

  // 7-day realized APY at each point (null before a week of history and at spikes: a gap, not 0).
  drawChart($('apy-chart'), {
    type: 'line',
    data: {
      labels,
      datasets: [
        line(
          'APY, 7-day realized',
          points.map((p) => p.apy_7d_pct),
          4,
          { spanGaps: false },
        ),
      ],
    },
    options: commonOptions($('apy-chart'), { y: { ticks: { callback: (n) => `${n}%` } } }, (c) => ` ${pct(c.parsed.y)}`),
  })
}
