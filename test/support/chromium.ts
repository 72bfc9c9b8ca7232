import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'

// One way to start the headless Chromium that test/http/browser.test.ts, test/live/explorer-live.test.ts
// and scripts/screenshots.ts drive: Debian's `chromium` through playwright-core, in a throwaway profile.
//
// Chromium is required in CI (.ci/run installs it with apt): there, a missing browser fails the
// importing file. Elsewhere, without CI set, a machine lacking it skips those suites.

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)
if (!hasChromium && process.env.CI) throw new Error(`Chromium is required in CI and was not found at ${CHROMIUM} (apt-get install -y chromium).`)

/** No network of its own (updates, sync, QUIC): a test then sees only the requests the page makes. */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export interface Browser {
  context: BrowserContext
  /** Closes the browser and removes its profile. */
  close(): Promise<void>
}

export async function launchChromium(options: { viewport: { width: number; height: number }; colorScheme?: 'light' | 'dark' }): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), 'vaultgate-chromium-'))
  try {
    const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: ARGS, headless: true, ...options })
    return {
      context,
      async close() {
        await context.close()
        rmSync(profile, { recursive: true, force: true })
      },
    }
  } catch (err) {
    rmSync(profile, { recursive: true, force: true })
    throw err
  }
}
