import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { existsSync, readFileSync } from 'node:fs'

/** The package root, whether running from src/ (tsx, vitest) or dist/ (compiled). */
function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error('vaultgate: package root not found')
    dir = parent
  }
  return dir
}

export const packageRoot = findRoot()
export const prismaSchemaPath = path.join(packageRoot, 'prisma', 'schema.prisma')
export const migrationsDir = path.join(packageRoot, 'prisma', 'migrations')
/** This package's version (package.json). */
export const packageVersion = (JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version
