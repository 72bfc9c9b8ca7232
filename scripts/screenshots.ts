// Regenerates the README's screenshot (docs/explorer.png): a gateway on the demo data, in memory,
// and the explorer in headless Chromium (desktop, light mode) on the first demo vault and timeframe
// (30d, then 1y, all, 7d) whose series shows a flagged spike (so the marker is in the picture), else
// on the vault of a demo wallet with an open position over 30 days.
//
//   npx tsx scripts/screenshots.ts        (needs /usr/bin/chromium, or CHROMIUM_PATH)
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { loadConfig } from '../src/config.js'
import { packageRoot } from '../src/core/paths.js'
import { startGateway } from '../src/server.js'
import { launchChromium } from '../test/support/chromium.js'

const config = loadConfig({ DATA_DIR: 'memory://', PORT: '0', LOG_LEVEL: 'warn', SEED_DEMO: 'true' })
const gateway = await startGateway(config)
const browser = await launchChromium({ viewport: { width: 1440, height: 1240 }, colorScheme: 'light' })
const { context } = browser
try {
  const hints = await gateway.hints
  const wallet = hints?.wallets.find((w) => w.note.startsWith('open position')) ?? hints?.wallets[0]
  const get = async <T>(p: string) => (await (await fetch(`${gateway.url}/v1${p}`)).json()) as T
  const { items } = await get<{ items: { id: string }[] }>('/vaults?limit=200')
  let spiked: { vault: string; history: string } | undefined
  search: for (const history of ['30d', '1y', 'all', '7d'])
    for (const { id } of items) {
      const series = await get<{ points?: { flags?: string[] }[] }>(`/vaults/${id}/performance/series?timeframe=${history}`)
      if (series.points?.some((p) => p.flags?.includes('spike'))) {
        spiked = { vault: id, history }
        break search
      }
    }
  const vault = spiked?.vault ?? wallet?.vaultId
  const query = new URLSearchParams(vault ? { vault } : {})
  if (spiked && spiked.history !== '30d') query.set('history', spiked.history)
  if (wallet && wallet.vaultId === vault) query.set('wallet', wallet.address)
  process.stdout.write(spiked ? `spike shown: ${spiked.vault} over ${spiked.history}\n` : 'no spike in any series: the picture has none\n')
  const page = await context.newPage()
  await page.goto(`${gateway.url}/?${query}`)
  await page.waitForSelector('body[data-ready="true"]')
  mkdirSync(path.join(packageRoot, 'docs'), { recursive: true })
  const file = path.join(packageRoot, 'docs', 'explorer.png')
  await page.screenshot({ path: file })
  process.stdout.write(`${path.relative(process.cwd(), file)}\n`)
} finally {
  await browser.close()
  await gateway.close()
}
