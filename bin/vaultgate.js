#!/usr/bin/env node
// Runs the compiled CLI (dist/ is built by `npm install` through the prepare script).
import { existsSync, readFileSync } from 'node:fs'

// An unsupported runtime is refused at once, in one line, before anything else is imported: on an
// older Node the gateway would otherwise start and fail later in ways that do not name the cause.
// The supported versions are package.json's `engines` (`^A.B.C` alternatives joined by `||`),
// which `.npmrc`'s engine-strict also enforces for installs.
const supported = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node
const [major, minor, patch] = process.versions.node.split('.').map(Number)
const runtimeOk = supported.split('||').some((range) => {
  const m = /^\s*\^(\d+)\.(\d+)\.(\d+)\s*$/.exec(range)
  if (!m) return false
  const [want, wantMinor, wantPatch] = m.slice(1).map(Number)
  return major === want && (minor > wantMinor || (minor === wantMinor && patch >= wantPatch))
})
if (!runtimeOk) {
  process.stderr.write(`vaultgate: Node.js ${process.versions.node} is not supported; use Node.js ${supported}.\n`)
  process.exit(1)
}

// `cp .env.example .env` works: settings in ./.env apply, and the real environment wins over
// the file (process.loadEnvFile never overwrites a variable that is already set).
if (existsSync('.env')) process.loadEnvFile('.env')

const entry = new URL('../dist/cli.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('vaultgate: dist/ is missing; run `npm run build` (npm install normally does this).\n')
  process.exit(1)
}
// OpenTelemetry (opt-in, src/core/telemetry.ts) starts before anything it instruments is imported.
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) await (await import(new URL('../dist/core/telemetry.js', import.meta.url).href)).startTelemetry()
const { main } = await import(entry.href)
await main(process.argv.slice(2))
