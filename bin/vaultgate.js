#!/usr/bin/env node
// Runs the compiled CLI (dist/ is built by `npm install` through the prepare script).
import { existsSync } from 'node:fs'

const entry = new URL('../dist/cli.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('vaultgate: dist/ is missing; run `npm run build` (npm install normally does this).\n')
  process.exit(1)
}
// OpenTelemetry (opt-in, src/core/telemetry.ts) starts before anything it instruments is imported.
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) await (await import(new URL('../dist/core/telemetry.js', import.meta.url).href)).startTelemetry()
const { main } = await import(entry.href)
await main(process.argv.slice(2))
