import { mkdirSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { createAdaptorServer } from '@hono/node-server'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { importDocument } from '../../src/importer/write.js'
import { packageRoot } from '../../src/core/paths.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { type Browser, CHROMIUM, hasChromium, launchChromium } from '../support/chromium.js'
import { testBackend } from '../support/db.js'
import { ALPHA_ASSETS, ALPHA_PLATFORMS, EXPLORER_NOW, explorerDocument, fullVault, WALLET } from '../support/explorer-data.js'
import { alphaHistory, gammaHistory, gammaVault } from '../support/performance-data.js'

// The explorer, the API reference and GraphiQL in a real headless Chromium (Debian's `chromium`,
// driven by playwright-core), against a gateway listening on a local port. Screenshots go to
// test-output/<backend>/.
// Chromium from test/support/chromium.ts: required in CI, skipped elsewhere without it, and said so.
if (!hasChromium) process.stderr.write(`browser.test.ts: skipped, no Chromium at ${CHROMIUM} (install it with: apt-get install -y chromium)\n`)
const outDir = path.join(packageRoot, 'test-output', testBackend)

/** The labels a Chart.js chart on `canvasId` shows: its data labels and its datasets' labels and sizes. */
const chartOf = (page: Page, canvasId: string) =>
  page.evaluate((id) => {
    const chart = (
      window as unknown as { Chart: { getChart(el: Element): { data: { labels: string[]; datasets: { label: string; data: number[] }[] } } | undefined } }
    ).Chart.getChart(document.getElementById(id)!)
    if (!chart) return null
    return { labels: chart.data.labels, datasets: chart.data.datasets.map((d) => ({ label: d.label, points: d.data.length })) }
  }, canvasId)

/** Per dataset of a chart: its label, how many points it has and how many of them are drawn (not null). */
interface DatasetSummary {
  label: string
  points: number
  drawn: number
}
const datasetsOf = (page: Page, canvasId: string): Promise<DatasetSummary[]> =>
  page.evaluate((id) => {
    const chart = (window as any).Chart.getChart(document.getElementById(id)!)
    return chart.data.datasets.map((d: { label: string; data: (number | null)[] }) => ({
      label: d.label,
      points: d.data.length,
      drawn: d.data.filter((n) => n !== null).length,
    }))
  }, canvasId)

/** How many pixels of a canvas were painted (a chart that failed to draw leaves it blank). */
const paintedPixels = (page: Page, canvasId: string) =>
  page.evaluate((id) => {
    const canvas = document.getElementById(id) as HTMLCanvasElement
    const pixels = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data
    let painted = 0
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) painted++
    return painted
  }, canvasId)

describe.skipIf(!hasChromium)(`explorer, docs and GraphiQL in Chromium (${testBackend})`, () => {
  let t: TestApp
  let app: App
  let server: Server
  let base: string
  let browser: Browser
  let context: BrowserContext
  const foreignRequests: string[] = []
  /** The gateways under test (a second one for the stale header): requests to them are not foreign. */
  const gateways: string[] = []
  const pageErrors: string[] = []

  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => EXPLORER_NOW })
    // With the vaults' history; the import runs at the newest snapshot's time, so the snapshot a
    // vault record adds (decisions §9) is that one.
    const newest = new Date(alphaHistory.at(-1)!.as_of)
    await importDocument(
      { ...explorerDocument, vaults: [...explorerDocument.vaults, gammaVault], vault_snapshots: [...alphaHistory, ...gammaHistory] },
      t.db.prisma,
      { clock: () => newest },
    )
    app = createApp({
      config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }),
      db: t.db,
      clock: () => EXPLORER_NOW,
      examples: { vaultId: fullVault.id, wallet: WALLET, walletVaultId: fullVault.id },
    })
    server = createAdaptorServer({ fetch: app.fetch }) as Server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    gateways.push(base)
    mkdirSync(outDir, { recursive: true })
    browser = await launchChromium({ viewport: { width: 1440, height: 1000 } })
    context = browser.context
    context.on('request', (r) => {
      const url = r.url()
      if (!gateways.some((g) => url.startsWith(`${g}/`)) && !/^(data|blob):/.test(url)) foreignRequests.push(url)
    })
  })
  afterAll(async () => {
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
    app?.close()
    await t?.close()
  })

  it('draws the vault list, metadata, composition and series charts, and a wallet lookup', async () => {
    const page = await context.newPage()
    page.on('pageerror', (e) => pageErrors.push(e.message))
    page.on('console', (m) => m.type() === 'error' && pageErrors.push(m.text()))
    await page.goto(`${base}/`)
    await page.waitForSelector('body[data-ready="true"]')
    expect(await page.locator('#error').isHidden()).toBe(true)

    // Largest USD TVL first: 1,250,000.5 USDC, 500,000 DAI, 0 WETH.
    expect(await page.locator('#vaults tr[data-vault]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.vault))).toEqual([
      'alpha-usdc',
      'gamma-dai',
      'beta-eth',
    ])
    expect(await page.locator('#vaults tr.selected').getAttribute('data-vault')).toBe(fullVault.id)
    expect(await page.locator('#vault-name').textContent()).toBe('Alpha USDC')
    expect(await page.locator('#vault-meta').textContent()).toContain('1,250,000.5 USDC')

    // The charts show what the API answers for this vault (labels in the API's order).
    const api = async (query: string) =>
      (await (await fetch(`${base}/v1/vaults/${fullVault.id}/composition/series?${query}`)).json()) as { labels: string[]; points: unknown[] }
    const series30d = await api('timeframe=30d&group_by=platform')
    expect(series30d.labels).toEqual(ALPHA_PLATFORMS)
    expect(await chartOf(page, 'composition-chart')).toEqual({ labels: ['Morpho', 'Aave', 'Spark'], datasets: [{ label: 'Share by platform', points: 3 }] })
    expect(await chartOf(page, 'series-chart')).toEqual({
      labels: expect.any(Array),
      datasets: ALPHA_PLATFORMS.map((label) => ({ label, points: series30d.points.length })),
    })
    expect(series30d.points.length).toBe(120) // 30 days of 6-hour buckets, all after the first snapshot
    expect(await paintedPixels(page, 'composition-chart')).toBeGreaterThan(5000)
    expect(await paintedPixels(page, 'series-chart')).toBeGreaterThan(5000)

    // A wallet: its position in the vault and its transactions, newest first.
    await page.fill('#wallet-address', WALLET.toUpperCase().replace('0X', '0x'))
    await page.click('#wallet-form button[type="submit"]')
    await page.waitForSelector('#transactions tr[data-tx]')
    expect(await page.locator('#transactions tr[data-tx]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.tx))).toEqual([
      'tx-4',
      'tx-3',
      'tx-2',
      'tx-1',
    ])
    const position = await page.locator('#position').textContent()
    expect(position).toContain('1,190')
    expect(position).toContain('1,500')
    expect(await page.locator('#pending').textContent()).toBe('1 redeem not paid yet: 104.25 pending, 0 claimable.')

    await page.screenshot({ path: path.join(outDir, 'explorer.png'), fullPage: true })

    // Group by asset over 7 days: both charts follow, and the URL keeps the view.
    await page.selectOption('#group-by', 'asset')
    await page.selectOption('#timeframe', 'P7D')
    await page.waitForFunction(() => (window as any).Chart.getChart(document.getElementById('series-chart')).data.datasets[0].data.length === 168)
    const series7d = await api('timeframe=7d&group_by=asset')
    expect(series7d.labels).toEqual(ALPHA_ASSETS)
    expect(await chartOf(page, 'series-chart')).toEqual({ labels: expect.any(Array), datasets: ALPHA_ASSETS.map((label) => ({ label, points: 168 })) })
    expect((await chartOf(page, 'composition-chart'))?.labels).toEqual(ALPHA_ASSETS)
    expect(new URL(page.url()).search).toBe(`?vault=alpha-usdc&wallet=${WALLET}&group_by=asset&timeframe=P7D`)

    await page.screenshot({ path: path.join(outDir, 'explorer-asset-7d.png'), fullPage: true })
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('charts share price, TVL and APY over a timeframe, with the APY windows, spikes and freshness', async () => {
    const page = await context.newPage()
    page.on('pageerror', (e) => pageErrors.push(e.message))
    page.on('console', (m) => m.type() === 'error' && pageErrors.push(m.text()))
    await page.goto(`${base}/?vault=${fullVault.id}`)
    await page.waitForSelector('body[data-ready="true"]')
    expect(await page.locator('#error').isHidden()).toBe(true)
    expect(await page.locator('#performance-error').isHidden()).toBe(true)

    const rest = async <T>(p: string) => (await (await fetch(`${base}/v1${p}`)).json()) as T
    type Point = { t: string; share_price: string; tvl: string; tvl_usd: string | null; apy_7d_pct: number | null; flags?: string[] }
    const perf = await rest<{ as_of: string; apy_pct: Record<string, number | null> }>(`/vaults/${fullVault.id}/performance`)
    const series = (timeframe: string) => rest<{ timeframe: string; points: Point[] }>(`/vaults/${fullVault.id}/performance/series?timeframe=${timeframe}`)

    // The APY window cards: the API's values, "—" with an explanation where it answers null.
    expect(perf.apy_pct).toEqual({
      '1d': expect.any(Number),
      '7d': expect.any(Number),
      '30d': expect.any(Number),
      '90d': null,
      '1y': null,
      inception: expect.any(Number),
    })
    const cards = await page
      .locator('#apy-cards li')
      .evaluateAll((items) =>
        items.map((li) => ({ window: (li as HTMLElement).dataset.window, value: li.querySelector('strong')!.textContent, title: (li as HTMLElement).title })),
      )
    expect(cards.map((c) => [c.window, c.value])).toEqual(Object.entries(perf.apy_pct).map(([w, v]) => [w, v === null ? '—' : `${v.toFixed(2)}%`]))
    expect(cards.find((c) => c.window === '90d')!.title).toContain('does not reach back 90 days')
    expect(await page.locator('#apy-null-note').isVisible()).toBe(true)
    expect(await page.locator('#performance-as-of').textContent()).toBe(`as of ${perf.as_of.slice(0, 16).replace('T', ' ')} UTC`)

    // 30 days (the default): one point per 6-hour bucket; the spike is a marker beside the line,
    // and the APY line has a gap there (the API's null), not a 0.
    const s30 = await series('30d')
    expect(s30.points.length).toBe(120)
    const spikes = s30.points.filter((p) => p.flags?.includes('spike')).length
    expect(spikes).toBe(1)
    expect(await datasetsOf(page, 'share-price-chart')).toEqual([
      { label: 'Share price (USDC)', points: 120, drawn: 120 - spikes },
      { label: 'Spike (left out of APY)', points: 120, drawn: spikes },
    ])
    expect(await datasetsOf(page, 'tvl-chart')).toEqual([
      { label: 'TVL (USDC)', points: 120, drawn: 120 },
      { label: 'TVL (USD)', points: 120, drawn: 120 },
    ])
    expect(await datasetsOf(page, 'apy-chart')).toEqual([
      { label: 'APY, 7-day realized', points: 120, drawn: s30.points.filter((p) => p.apy_7d_pct !== null).length },
    ])
    expect(await page.locator('#spike-note').isVisible()).toBe(true)
    for (const id of ['share-price-chart', 'tvl-chart', 'apy-chart']) expect(await paintedPixels(page, id), id).toBeGreaterThan(5000)

    // The header says how old the data is (GET /v1/status); this gateway's data is fresh.
    const status = await rest<{ data_as_of: string; stale: boolean }>('/status')
    expect(status.stale).toBe(false)
    expect(await page.locator('#freshness').textContent()).toBe(`data as of ${status.data_as_of.slice(0, 16).replace('T', ' ')} UTC`)

    await page.screenshot({ path: path.join(outDir, 'explorer-performance.png'), fullPage: true })

    // Another timeframe fetches that series (and only that) and redraws the three charts.
    const asked: string[] = []
    page.on('request', (r) => r.url().includes('/performance') && asked.push(new URL(r.url()).pathname + new URL(r.url()).search))
    await page.click('#history-timeframe button[data-timeframe="7d"]')
    await page.waitForFunction(() => (window as any).Chart.getChart(document.getElementById('share-price-chart')).data.labels.length === 168)
    expect(asked).toEqual([`/v1/vaults/${fullVault.id}/performance/series?timeframe=7d`])
    const s7 = await series('7d')
    expect(s7.points.length).toBe(168)
    expect((await datasetsOf(page, 'share-price-chart')).map((d) => d.drawn)).toEqual([168 - 1, 1])
    expect((await datasetsOf(page, 'apy-chart'))[0]!.drawn).toBe(s7.points.filter((p) => p.apy_7d_pct !== null).length)
    expect(await page.locator('#history-timeframe button[aria-pressed="true"]').textContent()).toBe('7d')
    expect(new URL(page.url()).searchParams.get('history')).toBe('7d')

    // "all": weekly buckets over the 40 days of history.
    await page.click('#history-timeframe button[data-timeframe="all"]')
    const sAll = await series('all')
    await page.waitForFunction((n) => (window as any).Chart.getChart(document.getElementById('tvl-chart')).data.labels.length === n, sAll.points.length)
    expect(sAll.points.length).toBeGreaterThanOrEqual(6)
    await page.screenshot({ path: path.join(outDir, 'explorer-performance-all.png'), fullPage: true })
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('sorts the vault list by TVL and APY, and searches it, through the API', async () => {
    const page = await context.newPage()
    page.on('pageerror', (e) => pageErrors.push(e.message))
    await page.goto(`${base}/?vault=${fullVault.id}`)
    await page.waitForSelector('body[data-ready="true"]')
    const rows = () =>
      page.locator('#vaults tr[data-vault]').evaluateAll((trs) => trs.map((r) => [(r as HTMLElement).dataset.vault, r.querySelector('td.apy')!.textContent]))
    // The order the API gives for the same argument (the page does not sort by itself: the list pages).
    const apiOrder = async (orderBy: string | null, search: string | null = null) => {
      const res = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: 'query($o: VaultOrder, $s: String) { vaults(first: 200, orderBy: $o, search: $s) { edges { node { id performance { apy7d apy30d } } } } }',
          variables: { o: orderBy && { field: orderBy, direction: 'desc' }, s: search },
        }),
      })
      const body = (await res.json()) as { data: { vaults: { edges: { node: { id: string; performance: Record<string, number | null> } }[] } } }
      return body.data.vaults.edges.map(({ node }) => {
        const apy = node.performance[orderBy === 'apy30d' ? 'apy30d' : 'apy7d']
        return [node.id, apy === null || apy === undefined ? '—' : `${apy.toFixed(2)}%`]
      })
    }
    const expected = {
      tvlUsd: ['alpha-usdc', 'gamma-dai', 'beta-eth'],
      // gamma-dai's price rises four times as fast; beta-eth has no history (null: last).
      apy7d: ['gamma-dai', 'alpha-usdc', 'beta-eth'],
      // Only alpha-usdc has 30 days of history; the others tie at null and go by id.
      apy30d: ['alpha-usdc', 'beta-eth', 'gamma-dai'],
      tvl: ['alpha-usdc', 'gamma-dai', 'beta-eth'],
      id: ['alpha-usdc', 'beta-eth', 'gamma-dai'],
    }
    expect(await rows()).toEqual(await apiOrder('tvlUsd'))
    for (const [sort, ids] of Object.entries(expected)) {
      await page.selectOption('#vault-sort', sort)
      const api = await apiOrder(sort === 'id' ? null : sort)
      expect(api.map(([id]) => id)).toEqual(ids)
      await expect.poll(rows).toEqual(api)
    }
    expect(await page.locator('#apy-heading').textContent()).toBe('APY 7d')
    await page.selectOption('#vault-sort', 'apy30d')
    await expect.poll(() => page.locator('#apy-heading').textContent()).toBe('APY 30d')
    expect((await rows()).map(([, apy]) => apy)).toEqual((await apiOrder('apy30d')).map(([, apy]) => apy))

    // Search: name, symbol or id (the API's search), in the URL with the sort.
    await page.fill('#vault-search', 'DAI')
    await expect.poll(rows).toEqual(await apiOrder('apy30d', 'DAI'))
    expect((await rows()).map(([id]) => id)).toEqual(['gamma-dai'])
    expect(new URL(page.url()).search).toBe(`?vault=${fullVault.id}&sort=apy30d&q=DAI`)
    await page.fill('#vault-search', 'nothing like this')
    await expect.poll(() => page.locator('#vaults').textContent()).toBe('No vault matches.')
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('marks the header stale when the newest data is older than STALE_AFTER_MS', async () => {
    // The same database seen two hours after EXPLORER_NOW: the newest snapshot is 2.5 h old (> 1 h).
    const later = new Date(EXPLORER_NOW.getTime() + 2 * 3_600_000)
    const lateApp = createApp({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), db: t.db, clock: () => later })
    const lateServer = createAdaptorServer({ fetch: lateApp.fetch }) as Server
    await new Promise<void>((resolve) => lateServer.listen(0, '127.0.0.1', resolve))
    const lateBase = `http://127.0.0.1:${(lateServer.address() as AddressInfo).port}`
    gateways.push(lateBase)
    try {
      const status = (await (await fetch(`${lateBase}/v1/status`)).json()) as { data_as_of: string; stale: boolean }
      expect(status.stale).toBe(true)
      const page = await context.newPage()
      page.on('pageerror', (e) => pageErrors.push(e.message))
      await page.goto(`${lateBase}/?vault=${fullVault.id}`)
      await page.waitForSelector('body[data-ready="true"]')
      expect(await page.locator('#freshness').textContent()).toBe(`data as of ${status.data_as_of.slice(0, 16).replace('T', ' ')} UTCstale`)
      expect(await page.locator('#freshness .badge.stale').isVisible()).toBe(true)
      await page.locator('#freshness').screenshot({ path: path.join(outDir, 'explorer-stale.png') })
      await page.close()
    } finally {
      await new Promise((resolve) => lateServer.close(resolve))
      lateApp.close()
    }
  })

  it('fits a 390 px phone and follows the system dark mode, charts included', async () => {
    const page = await context.newPage()
    page.on('pageerror', (e) => pageErrors.push(e.message))
    await page.goto(`${base}/?vault=${fullVault.id}&wallet=${WALLET}`)
    await page.waitForSelector('body[data-ready="true"]')
    await page.waitForSelector('#transactions tr[data-tx]')
    const look = () =>
      page.evaluate(() => {
        const charts = ['series-chart', 'share-price-chart', 'tvl-chart', 'apy-chart'].map((id) => (window as any).Chart.getChart(document.getElementById(id)))
        // The colours each chart draws its tick labels and grid with (resolved options, not defaults): one pair for all.
        const ticks = [...new Set(charts.map((c) => c.scales.x.options.ticks.color))]
        const grid = [...new Set(charts.map((c) => c.scales.y.options.grid.color))]
        return {
          background: getComputedStyle(document.documentElement).backgroundColor,
          ink: getComputedStyle(document.body).color,
          ticks: ticks.length === 1 ? ticks[0] : ticks,
          grid: grid.length === 1 ? grid[0] : grid,
        }
      })
    const light = { background: 'rgb(245, 247, 250)', ink: 'rgb(27, 36, 48)', ticks: '#667085', grid: '#e4e7ec' }
    const dark = { background: 'rgb(14, 19, 25)', ink: 'rgb(227, 232, 238)', ticks: '#98a2b3', grid: '#2a3441' }
    expect(await look()).toEqual(light)

    // Dark mode while the page is open: the page and the already drawn charts switch.
    await page.emulateMedia({ colorScheme: 'dark' })
    await expect.poll(look).toEqual(dark)
    expect(await paintedPixels(page, 'series-chart')).toBeGreaterThan(5000)
    await page.screenshot({ path: path.join(outDir, 'explorer-dark.png'), fullPage: true })

    // A 390 px phone: nothing is wider than the screen (wide tables scroll inside their panel).
    await page.setViewportSize({ width: 390, height: 844 })
    const pageWidth = () => page.evaluate(() => document.scrollingElement!.scrollWidth)
    await expect.poll(pageWidth).toBeLessThanOrEqual(390)
    // The doughnut's legend moves under it (no room beside it).
    await expect
      .poll(() => page.evaluate(() => (window as any).Chart.getChart(document.getElementById('composition-chart')).legend.options.position))
      .toBe('bottom')
    for (const id of ['share-price-chart', 'tvl-chart', 'apy-chart', 'composition-chart', 'series-chart'])
      expect(await page.evaluate((i) => document.getElementById(i)!.getBoundingClientRect().right, id), id).toBeLessThanOrEqual(390)
    await page.screenshot({ path: path.join(outDir, 'explorer-phone-dark.png'), fullPage: true })
    await page.emulateMedia({ colorScheme: 'light' })
    await expect.poll(look).toEqual(light)
    expect(await pageWidth()).toBeLessThanOrEqual(390)
    await page.screenshot({ path: path.join(outDir, 'explorer-phone.png'), fullPage: true })
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('keeps every metadata and position label above its own value at any width, light and dark', async () => {
    const page = await context.newPage()
    page.on('pageerror', (e) => pageErrors.push(e.message))
    await page.goto(`${base}/?vault=${fullVault.id}&wallet=${WALLET}`)
    await page.waitForSelector('body[data-ready="true"]')
    await page.waitForSelector('#position dd')
    /** Per label of a list: its value's text, and whether that value sits right under it (same left edge, below it). */
    const pairs = (id: string) =>
      page.evaluate((listId) => {
        return [...document.getElementById(listId)!.querySelectorAll('dt')].map((dt) => {
          const dd = dt.nextElementSibling
          if (dd?.tagName !== 'DD') return { label: dt.textContent, value: null, under: false }
          const [a, b] = [dt.getBoundingClientRect(), dd.getBoundingClientRect()]
          return { label: dt.textContent, value: dd.textContent, under: b.top >= a.bottom - 0.5 && Math.abs(b.left - a.left) < 0.5 }
        })
      }, id)
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme })
      for (const width of [1024, 1280, 1440, 1600, 390]) {
        await page.setViewportSize({ width, height: 1000 })
        await expect.poll(() => page.evaluate(() => innerWidth)).toBe(width)
        const meta = await pairs('vault-meta')
        const position = await pairs('position')
        const at = `${width} px, ${colorScheme}`
        expect(
          meta.filter((p) => !p.under),
          at,
        ).toEqual([])
        expect(
          position.filter((p) => !p.under),
          at,
        ).toEqual([])
        expect(meta.find((p) => p.label === 'TVL')?.value, at).toBe('1,250,000.5 USDC')
        expect(meta.find((p) => p.label === 'Share price')?.value, at).toMatch(/ USDC$/)
        expect(position.find((p) => p.label === 'Shares')?.value, at).toBe('1,190')
        expect(position.find((p) => p.label === 'Deposited')?.value, at).toBe('1,500')
      }
    }
    await page.emulateMedia({ colorScheme: 'light' })
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('renders the API reference from /openapi.json', async () => {
    const page = await context.newPage()
    page.on('pageerror', (e) => pageErrors.push(e.message))
    await page.goto(`${base}/docs`)
    await page.waitForSelector('.opblock')
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, object>; webhooks: Record<string, object> }
    // Every operation and every webhook event (Swagger UI draws both as operation blocks).
    const operations = [...Object.values(doc.paths), ...Object.values(doc.webhooks)].reduce((n, ops) => n + Object.keys(ops).length, 0)
    expect(await page.locator('.opblock').count()).toBe(operations)
    expect(await page.locator('.opblock-summary-path').allTextContents()).toEqual(expect.arrayContaining(['/v1/vaults/{vault_id}/composition/series']))
    await page.screenshot({ path: path.join(outDir, 'docs.png'), fullPage: false })
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('runs the first example operation in GraphiQL', async () => {
    const page = await context.newPage()
    page.on('pageerror', (e) => pageErrors.push(e.message))
    await page.goto(`${base}/graphql`)
    const run = page.locator('.graphiql-execute-button')
    await run.waitFor()
    const answer = page.waitForResponse(
      (r) => r.url() === `${base}/graphql` && r.request().method() === 'POST' && (r.request().postData() ?? '').includes('"operationName":"Vault"'),
    )
    // The document holds several operations: the run button asks which one.
    await run.click()
    await page.getByRole('menuitem', { name: 'Vault', exact: true }).click()
    const body = (await (await answer).json()) as { data: { vault: { name: string; composition: { positions: { platform: string }[] } } } }
    expect(body.data?.vault?.name, JSON.stringify(body).slice(0, 400)).toBe('Alpha USDC')
    expect(body.data.vault.composition.positions.map((p) => p.platform)).toEqual(['Morpho', 'Aave', 'Spark'])
    // The answer is shown in the result pane (an editor that renders the lines in view, with no-break spaces).
    const shown = async () => ((await page.locator('.graphiql-response').textContent()) ?? '').replace(/\s+/g, ' ')
    await expect.poll(shown, { timeout: 30_000 }).toContain('"name": "Alpha USDC"')
    await page.screenshot({ path: path.join(outDir, 'graphiql.png') })
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('loads nothing from anywhere but the gateway', () => {
    expect(foreignRequests).toEqual([])
  })
})
