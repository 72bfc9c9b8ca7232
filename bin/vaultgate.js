#!/usr/bin/env node
// Runs the compiled CLI (dist/ is built by `npm install` through the prepare script).
import { existsSync } from 'node:fs'

const entry = new URL('../dist/cli.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('vaultgate: dist/ is missing; run `npm run build` (npm install normally does this).\n')
  process.exit(1)
}
const { main } = await import(entry.href)
await main(process.argv.slice(2))
