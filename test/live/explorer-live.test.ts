import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { type Browser, hasChromium, launchChromium } from '../support/chromium.js'
import { testBackend } from '../support/db.js'
import { EXPLORER_NOW, explorerDocument, fullVault, WALLET } from '../support/explorer-data.js'
import { listen, liveVault } from '../support/live.js'

// The explorer page follows the vault it shows and the wallet looked up over subscriptions
// (public/explorer/live.js): an import made while the page is open shows on it without a reload.
// Chromium from test/support/chromium.ts (required in CI, skipped elsewhere without it).

/** The labels of the Chart.js chart on `canvasId`. */
const chartLabels = (page: Page, canvasId: string) =>
  page.evaluate(
    (id) =>
      (window as unknown as { Chart: { getChart(el: Element): { data: { labels: string[] } } | undefined } }).Chart.getChart(document.getElementById(id)!)?.data
        .labels,
    canvasId,
  )

describe.skipIf(!hasChromium)(`explorer live updates in Chromium (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  let browser: Browser
  let context: BrowserContext
  beforeAll(async () => {
    t = await createTestApp({}, { clock: () => EXPLORER_NOW })
    await importDocument(explorerDocument, t.db.prisma)
    // The vault GraphiQL's examples name when no demo data is loaded (src/graphql/examples.ts).
    await importDocument({ vaults: [liveVault('usdc-prime')] }, t.db.prisma)
    ;({ base, stop } = await listen(t.app))
    browser = await launchChromium({ viewport: { width: 1280, height: 900 } })
    context = browser.context
  })
  afterAll(async () => {
    await browser?.close()
    await stop?.()
    await t?.close()
  })

  it("shows an import's new values, composition and the watched wallet's new transaction while the page is open", async () => {
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${base}/?vault=${fullVault.id}&wallet=${WALLET}`)
    await page.waitForSelector('body[data-ready="true"]')
    // Subscribed to the vault and the wallet the page shows.
    await page.waitForSelector(`body[data-live-vault="${fullVault.id}"][data-live-wallet="${WALLET}"]`)
    expect(await page.locator('#vault-meta').textContent()).toContain('1,250,000.5 USDC')
    expect(await chartLabels(page, 'composition-chart')).toEqual(['Morpho', 'Aave', 'Spark'])
    expect(await page.locator('#transactions tr[data-tx]').count()).toBe(4)

    await importDocument(
      {
        vaults: [{ ...fullVault, tvl: '1300000' }],
        compositions: [
          {
            vault_id: fullVault.id,
            as_of: new Date(EXPLORER_NOW.getTime() - 60_000).toISOString(),
            positions: [{ platform: 'Euler', asset: 'USD Coin', symbol: 'USDC', pct: 100, apy_est_pct: 7, icon: 'https://icons.test/euler.svg' }],
          },
        ],
        transactions: [
          {
            id: 'tx-5',
            vault_id: fullVault.id,
            address: WALLET,
            type: 'deposit',
            status: 'completed',
            amount: '777',
            shares: '745',
            timestamp: new Date(EXPLORER_NOW.getTime() - 120_000).toISOString(),
            completed_at: new Date(EXPLORER_NOW.getTime() - 60_000).toISOString(),
            tx_hash: `0x${'5'.padStart(64, '0')}`,
          },
        ],
      },
      t.db.prisma,
    )
    await page.waitForFunction(() => document.getElementById('vault-meta')?.textContent?.includes('1,300,000 USDC'), undefined, { timeout: 5000 })
    await page.waitForSelector('#transactions tr[data-tx="tx-5"]', { timeout: 5000 })
    expect(await page.locator('#transactions tr[data-tx]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.tx))).toEqual([
      'tx-5',
      'tx-4',
      'tx-3',
      'tx-2',
      'tx-1',
    ])
    expect(await chartLabels(page, 'composition-chart')).toEqual(['Euler'])
    expect(errors).toEqual([])
    await page.close()
  })

  it('runs the VaultUpdated example in GraphiQL and shows the event an import sends', async () => {
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${base}/graphql`)
    const run = page.locator('.graphiql-execute-button')
    await run.waitFor()
    // GraphiQL subscribes with GET /graphql?query=…&operationName=VaultUpdated, Accept: text/event-stream.
    const subscribed = page.waitForResponse((r) => r.url().startsWith(`${base}/graphql?`) && r.url().includes('operationName=VaultUpdated'))
    await run.click()
    await page.getByRole('menuitem', { name: 'VaultUpdated', exact: true }).click()
    const response = await subscribed
    expect(response.headers()['content-type']).toBe('text/event-stream')
    await expect.poll(() => t.app.subscriptions.listeners, { timeout: 10_000 }).toBe(1)
    await importDocument({ vaults: [liveVault('usdc-prime', { tvl: '4242.42' })] }, t.db.prisma)
    const shown = async () => ((await page.locator('.graphiql-response').textContent()) ?? '').replace(/\s+/g, ' ')
    await expect.poll(shown, { timeout: 10_000 }).toContain('"tvl": "4242.42"')
    expect(errors).toEqual([])
    await page.close()
  })
})
