// Helpers shared by the explorer's modules: DOM, formatting, the two APIs, chart colours.
// Chart.js is the global `Chart` (chart.umd.min.js, a classic script that runs before the modules).

export const $ = (id) => document.getElementById(id)

const PALETTE = ['#2563eb', '#f59e0b', '#10b981', '#ef4444', '#8b5cf6', '#06b6d4', '#f97316', '#84cc16', '#ec4899', '#64748b']
export const color = (i, alpha = 1) => {
  const hex = PALETTE[i % PALETTE.length]
  const [r, g, b] = [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16))
  return `rgba(${r}, ${g}, ${b}, ${alpha})`
}

export async function graphql(query, variables) {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify({ query, variables }),
  })
  const body = await res.json().catch(() => ({ errors: [{ message: `HTTP ${res.status}` }] }))
  if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join(' '))
  return body.data
}

/** A REST read under /v1: the bare body, or an Error carrying the API's message. */
export async function rest(path) {
  const res = await fetch(`/v1${path}`, { headers: { accept: 'application/json' } })
  const body = await res.json().catch(() => null)
  if (!res.ok) throw new Error(body?.error?.message ?? `GET /v1${path}: HTTP ${res.status}`)
  return body
}

/** Amounts arrive as exact decimal strings: group and trim them as text, never through a float. */
export function amount(text, maxFraction = 2) {
  if (text === null || text === undefined) return '—'
  const negative = text.startsWith('-')
  const [int, frac = ''] = (negative ? text.slice(1) : text).split('.')
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  const shown = frac.slice(0, maxFraction).replace(/0+$/, '')
  return `${negative ? '-' : ''}${grouped}${shown ? `.${shown}` : ''}`
}

/** A short amount for lists ("78.6M", "1.23B", "940.2K"): from the decimal string, rounded half up, no float. */
export function compact(text) {
  if (text === null || text === undefined) return '—'
  const negative = text.startsWith('-')
  const int = BigInt((negative ? text.slice(1) : text).split('.')[0])
  const units = [
    [1_000_000_000_000n, 'T'],
    [1_000_000_000n, 'B'],
    [1_000_000n, 'M'],
    [1_000n, 'K'],
  ]
  let i = units.findIndex(([u]) => int >= u)
  if (i < 0) return `${negative ? '-' : ''}${amount(text.replace('-', ''), int >= 100n ? 0 : 2)}`
  const round = (size) => (int * 10n + size / 2n) / size // tenths of the unit, rounded half up
  if (i > 0 && round(units[i][0]) >= 10000n) i-- // 999,999.9 is 1M, not 1000K
  const [size, suffix] = units[i]
  const tenths = round(size)
  const shown = tenths >= 1000n ? `${tenths / 10n}` : `${tenths / 10n}.${tenths % 10n}`
  return `${negative ? '-' : ''}${shown.replace(/\.0$/, '')}${suffix}`
}

export const pct = (n) => (n === null || n === undefined ? '—' : `${n.toFixed(2)}%`)
export const day = (iso) => (iso ? iso.slice(0, 10) : '—')
export const minute = (iso) => iso.slice(0, 16).replace('T', ' ')

/** Axis labels for a series on the API's grid: "11-14 13:00" for hourly and 6-hour buckets, the date otherwise. */
export const bucketLabel = (hourly) => (iso) => (hourly ? minute(iso).slice(5) : day(iso))

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v
    else if (k.startsWith('data-') || k.startsWith('aria-')) node.setAttribute(k, v)
    else node[k] = v
  }
  for (const c of children) node.append(c)
  return node
}

/**
 * A <dl> of [term, value] rows, each pair in its own <div> (HTML allows it): the grid places pairs,
 * so a value stays under its label whatever the number of columns (test/http/browser.test.ts).
 */
export function definitionList(target, rows) {
  target.replaceChildren(...rows.map(([term, value]) => el('div', {}, el('dt', {}, term), el('dd', {}, value ?? '—'))))
}

export const isPhone = () => matchMedia('(max-width: 600px)').matches

/** Draws a chart on a canvas the first time, and replaces its data and options afterwards (scales follow the data). */
export function drawChart(canvas, config) {
  const chart = Chart.getChart(canvas)
  if (!chart) return new Chart(canvas, config)
  chart.config.options = config.options
  chart.data = config.data
  chart.update()
  return chart
}

/**
 * Chart colours come from the page's CSS variables, so the charts follow prefers-color-scheme
 * (explorer.css) and switch with it while the page is open.
 */
export function applyTheme() {
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
