#!/usr/bin/env node
// Generates the Prisma client (and the Pothos types) from prisma/schema.prisma.
//
// The stock `prisma generate` is tried first. Where it cannot download its native
// schema-engine binary (no network), it is run again with PRISMA_SCHEMA_ENGINE_BINARY
// naming an existing file: generate never runs that engine, it only insists the file exists.
// Skipped when the output is newer than the schema and this script (a stamp records the inputs).
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const schemaPath = join(root, 'prisma/schema.prisma')
const stampPath = join(root, 'src/generated/.stamp')
const force = process.argv.includes('--force')

const inputs = createHash('sha256')
  .update(readFileSync(schemaPath))
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .update(readFileSync(join(root, 'node_modules/prisma/package.json')))
  .digest('hex')

if (!force && existsSync(stampPath) && readFileSync(stampPath, 'utf8') === inputs && existsSync(join(root, 'src/generated/prisma/client.ts'))) {
  process.exit(0)
}

const prismaBin = join(root, 'node_modules/prisma/build/index.js')
const run = (env) =>
  spawnSync(process.execPath, [prismaBin, 'generate'], {
    cwd: root,
    env: { ...process.env, PATH: `${join(root, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}`, ...env },
    encoding: 'utf8',
  })

let result = run({})
const output = `${result.stdout}\n${result.stderr}`
const offline = /binaries\.prisma\.sh|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|fetch failed|getaddrinfo/i
if (result.status !== 0 && offline.test(output) && !process.env.PRISMA_SCHEMA_ENGINE_BINARY) {
  process.stderr.write('prisma generate: engine download unavailable (offline); generating without it.\n')
  result = run({ PRISMA_SCHEMA_ENGINE_BINARY: process.execPath })
}
if (result.status !== 0) {
  process.stderr.write(result.stdout + result.stderr)
  process.exit(result.status ?? 1)
}
writeFileSync(stampPath, inputs)
