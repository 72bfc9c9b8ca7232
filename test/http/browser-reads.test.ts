import { mkdirSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { createAdaptorServer } from '@hono/node-server'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { packageRoot } from '../../src/core/paths.js'
import type { ImportTransaction } from '../../src/importer/document.js'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { type Browser, CHROMIUM, hasChromium, launchChromium } from '../support/chromium.js'
import { testBackend } from '../support/db.js'
import { EXPLORER_NOW, explorerDocument, fullVault, WALLET } from '../support/explorer-data.js'
import { alphaHistory, gammaHistory, gammaVault } from '../support/performance-data.js'

// The explorer's reads of decisions §14 in a real headless Chromium against a gateway on a local
// port: a vault found by its contract, a custom range on the charts, the wallet's activity across
// vaults page by page, and its redeem queue with places and ETAs. What a user reads on the page is
// compared with known values of a hand-built dataset (and with the API's own answer where it is long).
if (!hasChromium) process.stderr.write(`browser-reads.test.ts: skipped, no Chromium at ${CHROMIUM} (install it with: apt-get install -y chromium)\n`)
const outDir = path.join(packageRoot, 'test-output', testBackend)

const HOUR = 3_600_000
const at = (hoursAgo: number) => new Date(EXPLORER_NOW.getTime() - hoursAgo * HOUR).toISOString()
const OTHER = '0x00000000000000000000000000000000000000a1'
const LATER = '0x00000000000000000000000000000000000000a2'
let hash = 100
const tx = (
  id: string,
  vault: string,
  address: string,
  type: ImportTransaction['type'],
  status: ImportTransaction['status'],
  amount: string,
  hoursAgo: number,
  completedHoursAgo: number | null = null,
): ImportTransaction => ({
  id,
  vault_id: vault,
  address,
  type,
  status,
  amount,
  shares: amount,
  timestamp: at(hoursAgo),
  completed_at: completedHoursAgo === null ? null : at(completedHoursAgo),
  tx_hash: `0x${(hash++).toString(16).padStart(64, '0')}`,
})

/**
 * Beside the explorer's data (the wallet's four transactions in alpha-usdc, its redeem tx-4 pending
 * since 3 h ago): two other wallets' pending redeems queued before tx-4 in alpha-usdc (300 and 50.5)
 * and one after it; ten redeems completed there in the last 90 days after 1 h, 2 h, … 10 h (median 5 h,
 * 90th percentile 9 h, nearest rank); in gamma-dai the wallet's 30 deposits and a claimable redeem.
 */
const extra: ImportTransaction[] = [
  tx('q-1', fullVault.id, OTHER, 'deposit', 'completed', '1000', 500, 500),
  tx('q-2', fullVault.id, OTHER, 'redeem', 'pending', '300', 10),
  tx('q-3', fullVault.id, OTHER, 'redeem', 'pending', '50.5', 5),
  tx('q-4', fullVault.id, LATER, 'redeem', 'pending', '20', 1),
  ...Array.from({ length: 10 }, (_, i) => tx(`done-${i + 1}`, fullVault.id, OTHER, 'redeem', 'completed', '1', 400 - i * 20, 400 - i * 20 - (i + 1))),
  ...Array.from({ length: 30 }, (_, i) => tx(`g-${String(i + 1).padStart(2, '0')}`, gammaVault.id, WALLET, 'deposit', 'completed', '10', 2 + i * 4, 2 + i * 4)),
  tx('g-claim', gammaVault.id, WALLET, 'redeem', 'claimable', '75', 20),
]

/** The rows of a table body as the user reads them: each cell's text. */
const cells = (page: Page, tbody: string) =>
  page.locator(`#${tbody} tr`).evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent?.trim())))
/** Waits for what the page shows (a redraw after a request: slow on a busy machine, so not the 1 s default). */
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 15_000 })
const labelsOf = (page: Page, canvasId: string) =>
  page.evaluate((id) => (window as any).Chart.getChart(document.getElementById(id)!).data.labels as string[], canvasId)

describe.skipIf(!hasChromium)(`explorer: by contract, ranges, a wallet across vaults, the redeem queue (${testBackend})`, () => {
  let t: TestApp
  let app: App
  let server: Server
  let base: string
  let browser: Browser
  let context: BrowserContext
  const pageErrors: string[] = []
  const foreign: string[] = []

  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => EXPLORER_NOW })
    const newest = new Date(alphaHistory.at(-1)!.as_of)
    await importDocument(
      {
        ...explorerDocument,
        vaults: [...explorerDocument.vaults, gammaVault],
        vault_snapshots: [...alphaHistory, ...gammaHistory],
        transactions: [...explorerDocument.transactions, ...extra],
      },
      t.db.prisma,
      { clock: () => newest },
    )
    app = createApp({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), db: t.db, clock: () => EXPLORER_NOW })
    server = createAdaptorServer({ fetch: app.fetch }) as Server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    mkdirSync(outDir, { recursive: true })
    browser = await launchChromium({ viewport: { width: 1440, height: 1000 } })
    context = browser.context
    context.on('request', (r) => {
      if (!r.url().startsWith(`${base}/`) && !/^(data|blob):/.test(r.url())) foreign.push(r.url())
    })
  })
  afterAll(async () => {
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
    app?.close()
    await t?.close()
  })

  const open = async (query: string) => {
    const page = await context.newPage()
    page.on('pageerror', (e) => pageErrors.push(e.message))
    page.on('console', (m) => m.type() === 'error' && pageErrors.push(m.text()))
    await page.goto(`${base}/${query}`)
    await page.waitForSelector('body[data-ready="true"]')
    expect(await page.locator('#error').isHidden()).toBe(true)
    return page
  }

  it("shows the wallet's redeem queue with its place, the amount ahead and the ETA, and claimable redeems", async () => {
    const page = await open(`?vault=${fullVault.id}&wallet=${WALLET}`)
    await page.waitForSelector('#redeems tr')
    // Oldest first: the claimable one in gamma-dai (20 h ago), then tx-4 in alpha-usdc (3 h ago, 09:30),
    // third in its queue behind 300 + 50.5; ETA = 09:30 + 5 h and + 9 h.
    expect(await cells(page, 'redeems')).toEqual([
      ['gamma-dai', '2026-11-20 16:30', '75', 'claimable', '—', '—', 'ready to claim', 'ready to claim'],
      ['alpha-usdc', '2026-11-21 09:30', '104.25', 'pending', '#3', '350.5', '2026-11-21 14:30 UTC', '2026-11-21 18:30 UTC'],
    ])
    // The mean delay of alpha-usdc's redeems completed in the last 90 days: (1 + … + 10) / 10 = 5.5 h.
    expect(await page.locator('#pending').textContent()).toBe(
      '2 redeems not paid yet: 104.25 pending, 75 claimable; recent redeems in these vaults took 5.5 h on average.',
    )
    // The same numbers the REST API answers.
    const api = (await (await fetch(`${base}/v1/users/${WALLET}/redeems`)).json()) as Record<string, unknown>
    expect(api).toMatchObject({ total_pending: '104.25', total_claimable: '75' })
    await page.locator('.wallet').screenshot({ path: path.join(outDir, 'explorer-redeem-queue.png') })

    // A vault named there opens in place: the wallet stays, its position is now the one in that vault.
    await page.click('#redeems a[data-vault="gamma-dai"]')
    await poll(() => page.locator('#vault-name').textContent()).toBe('Gamma DAI')
    await poll(async () => (await page.locator('#position').textContent())?.includes('Deposited300')).toBe(true)
    expect(new URL(page.url()).search).toBe(`?vault=gamma-dai&wallet=${WALLET}`)
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it("pages through the wallet's activity across vaults, and narrows it to the selected vault", async () => {
    const page = await open(`?vault=${fullVault.id}&wallet=${WALLET}`)
    await page.waitForSelector('#transactions tr[data-tx]')
    const ids = () => page.locator('#transactions tr[data-tx]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.tx))
    // The API's order across vaults (newest first), read over REST in two pages of 25.
    const restPage = async (cursor?: string) =>
      (await (await fetch(`${base}/v1/users/${WALLET}/transactions?limit=25${cursor ? `&cursor=${cursor}` : ''}`)).json()) as {
        items: { id: string }[]
        next_cursor: string | null
      }
    const first = await restPage()
    const second = await restPage(first.next_cursor!)
    expect(second.next_cursor).toBeNull()
    const all = [...first.items, ...second.items].map((x) => x.id)
    expect(all).toHaveLength(35) // 4 in alpha-usdc, 31 in gamma-dai
    expect(all.slice(0, 4)).toEqual(['g-01', 'tx-4', 'g-02', 'g-03'])

    expect(await ids()).toEqual(all.slice(0, 25))
    expect(await page.locator('#transactions-count').textContent()).toBe('25 shown, more older ones')
    // Each row names its vault; the first two are in two vaults.
    expect((await cells(page, 'transactions')).slice(0, 2).map((row) => row.slice(1, 5))).toEqual([
      ['gamma-dai', 'deposit', 'completed', '10'],
      ['alpha-usdc', 'redeem', 'pending', '104.25'],
    ])
    await page.click('#more-transactions')
    await poll(ids).toEqual(all)
    expect(await page.locator('#more-transactions').isHidden()).toBe(true)
    expect(await page.locator('#transactions-count').textContent()).toBe('35 shown')

    // Only the selected vault: its four, and the choice is in the URL.
    await page.selectOption('#activity', 'vault')
    await poll(ids).toEqual(['tx-4', 'tx-3', 'tx-2', 'tx-1'])
    expect(new URL(page.url()).searchParams.get('activity')).toBe('vault')
    expect(await page.locator('#more-transactions').isHidden()).toBe(true)
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('finds a vault by chain and contract address, and says so when none is there', async () => {
    const page = await open('')
    expect(await page.locator('#vault-name').textContent()).toBe('Alpha USDC')
    // CAIP-2 chain id, the address in capitals: gamma-dai.
    await page.fill('#lookup-chain', 'eip155:1')
    await page.fill('#lookup-address', gammaVault.contract.address.toUpperCase().replace('0X', '0x'))
    await page.click('#lookup-form button[type="submit"]')
    await poll(() => page.locator('#vault-name').textContent()).toBe('Gamma DAI')
    expect(await page.locator('#lookup-result').textContent()).toBe(`Gamma DAI: eip155:1:${gammaVault.contract.address}`)
    expect(new URL(page.url()).searchParams.get('vault')).toBe(gammaVault.id)
    expect(await page.locator('#vaults tr.selected').getAttribute('data-vault')).toBe(gammaVault.id)
    expect(await page.locator('#vault-meta').textContent()).toContain(`eip155:1:${gammaVault.contract.address}`)

    // The same contract on another chain: no vault, and the view stays.
    await page.fill('#lookup-chain', '8453')
    await page.click('#lookup-form button[type="submit"]')
    await poll(() => page.locator('#lookup-result').textContent()).toBe(
      `No vault at ${gammaVault.contract.address.toUpperCase().replace('0X', '0x')} on chain 8453.`,
    )
    expect(await page.locator('#vault-name').textContent()).toBe('Gamma DAI')

    // A malformed address: the API's own sentence.
    const bad = (await (
      await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ vaultByAddress(chainId: "1", address: "0x12") { id } }' }),
      })
    ).json()) as { errors: { message: string; extensions: { code: string } }[] }
    expect(bad.errors[0]!.extensions.code).toBe('bad_request')
    await page.fill('#lookup-address', '0x12')
    await page.click('#lookup-form button[type="submit"]')
    await poll(() => page.locator('#lookup-result').textContent()).toBe(bad.errors[0]!.message)
    expect(await page.locator('#error').isHidden()).toBe(true)
    expect(pageErrors).toEqual([])
    await page.close()
  })

  it('draws every chart over a chosen range and step, keeps it in the URL, and goes back to a timeframe', async () => {
    const page = await open(`?vault=${fullVault.id}`)
    const asked: string[] = []
    page.on('request', (r) => r.url().includes('/performance/series') && asked.push(new URL(r.url()).search))
    await page.fill('#range-from', '2026-11-10')
    await page.fill('#range-to', '2026-11-14')
    await page.selectOption('#range-interval', '1d')
    await page.click('#range-form button[type="submit"]')
    const days = ['2026-11-10', '2026-11-11', '2026-11-12', '2026-11-13', '2026-11-14']
    await poll(() => labelsOf(page, 'share-price-chart')).toEqual(days)
    expect(await labelsOf(page, 'series-chart')).toEqual(days)
    expect(asked).toEqual(['?from=2026-11-10T00%3A00%3A00.000Z&to=2026-11-15T00%3A00%3A00.000Z&interval=1d'])
    expect(await page.locator('#range-summary').textContent()).toBe('5 points, one per day, from 2026-11-10 00:00 to 2026-11-15 00:00 UTC')
    expect(await page.locator('#history-timeframe button[aria-pressed="true"]').count()).toBe(0)
    expect(await page.locator('#timeframe').inputValue()).toBe('RANGE')
    expect(new URL(page.url()).search).toBe(`?vault=${fullVault.id}&from=2026-11-10&to=2026-11-14&interval=1d`)
    // Each point is the API's for that range (the last snapshot before the bucket closed).
    const api = (await (
      await fetch(`${base}/v1/vaults/${fullVault.id}/performance/series?from=2026-11-10T00:00:00Z&to=2026-11-15T00:00:00Z&interval=1d`)
    ).json()) as { points: { t: string; share_price: string }[] }
    expect(await page.evaluate(() => (window as any).Chart.getChart(document.getElementById('share-price-chart')!).data.datasets[0].data as number[])).toEqual(
      api.points.map((p) => Number(p.share_price)),
    )
    await page.screenshot({ path: path.join(outDir, 'explorer-range.png'), fullPage: true })

    // The shared URL opens on the same range; "auto" picks the smallest step within 1,000 points (hours).
    const again = await open(`?vault=${fullVault.id}&from=2026-11-10&to=2026-11-14&interval=1d`)
    expect(await labelsOf(again, 'share-price-chart')).toEqual(days)
    expect(await again.locator('#range-from').inputValue()).toBe('2026-11-10')
    await again.selectOption('#range-interval', '')
    await again.click('#range-form button[type="submit"]')
    await poll(async () => (await labelsOf(again, 'share-price-chart')).length).toBe(5 * 24)
    expect(await again.locator('#range-summary').textContent()).toBe('120 points, one per hour, from 2026-11-10 00:00 to 2026-11-15 00:00 UTC')
    expect((await labelsOf(again, 'series-chart')).length).toBe(5 * 24)
    await again.close()

    // A range the API refuses (from after to): its sentence in the panel.
    await page.fill('#range-from', '2026-11-14')
    await page.fill('#range-to', '2026-11-10')
    await page.click('#range-form button[type="submit"]')
    await poll(() => page.locator('#performance-error').isVisible()).toBe(true)
    const refused = (await (
      await fetch(`${base}/v1/vaults/${fullVault.id}/performance/series?from=2026-11-14T00:00:00.000Z&to=2026-11-11T00:00:00.000Z`)
    ).json()) as {
      error: { code: string; message: string }
    }
    expect(refused.error.code).toBe('bad_request')
    expect(await page.locator('#performance-error').textContent()).toBe(`Performance history unavailable: ${refused.error.message}`)
    expect(await page.locator('#error').isHidden()).toBe(true) // said once, in the panel

    // A timeframe button ends the range on every chart.
    await page.click('#history-timeframe button[data-timeframe="30d"]')
    await poll(async () => (await labelsOf(page, 'share-price-chart')).length).toBe(120)
    await poll(async () => (await labelsOf(page, 'series-chart')).length).toBe(120)
    expect(await page.locator('#range-summary').isHidden()).toBe(true)
    expect(await page.locator('#timeframe').inputValue()).toBe('P30D')
    expect(new URL(page.url()).search).toBe(`?vault=${fullVault.id}`)
    await page.close()
  })

  it('loads nothing from anywhere but the gateway', () => {
    expect(foreign).toEqual([])
  })
})
