import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { CriticalityLevel, diff } from '@graphql-inspector/core'
import { buildSchema } from 'graphql'

// Decisions §15 "Evolution": schema.graphql against the last release's (releases/<version>.graphql,
// the schema as it shipped), by GraphQL Inspector's rules. A breaking change fails unless
// CHANGELOG.md's "Unreleased" section names its schema coordinate in backticks (`Type.field`);
// retire a field with @deprecated(reason:) first, and remove it in a later release, listed.
//
//   npx tsx scripts/schema-evolution.ts        (part of `npm run schema:check`, so of `npm test`)
//   npx tsx scripts/schema-evolution.ts --release OLD.graphql --schema NEW.graphql --changelog CHANGELOG.md

export interface Breaking {
  path: string
  message: string
}

/** The `## Unreleased` section of a changelog (up to the next `## `). */
export function unreleased(changelog: string): string {
  const start = changelog.search(/^## Unreleased\b/m)
  if (start === -1) return ''
  const rest = changelog.slice(start + 1)
  const end = rest.search(/^## /m)
  return end === -1 ? rest : rest.slice(0, end)
}

/** The breaking changes from `released` to `current` that `changelog`'s Unreleased section does not list. */
export async function unlistedBreakingChanges(released: string, current: string, changelog: string): Promise<Breaking[]> {
  const changes = await diff(buildSchema(released), buildSchema(current))
  const listed = unreleased(changelog)
  return changes
    .filter((c) => c.criticality.level === CriticalityLevel.Breaking)
    .map((c) => ({ path: c.path ?? '(schema)', message: c.message }))
    .filter((c) => !listed.includes(`\`${c.path}\``))
}

/** The newest release's schema file in `dir` (by version number). */
export function lastRelease(dir: string): string {
  const versions = readdirSync(dir)
    .filter((f) => /^\d+\.\d+\.\d+\.graphql$/.test(f))
    .sort((a, b) => {
      const [x, y] = [a, b].map((f) => f.replace('.graphql', '').split('.').map(Number))
      return x![0]! - y![0]! || x![1]! - y![1]! || x![2]! - y![2]!
    })
  if (versions.length === 0) throw new Error(`no release schema in ${dir}`)
  return path.join(dir, versions.at(-1)!)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
  const { values } = parseArgs({ options: { release: { type: 'string' }, schema: { type: 'string' }, changelog: { type: 'string' } } })
  const release = values.release ?? lastRelease(path.join(root, 'releases'))
  const unlisted = await unlistedBreakingChanges(
    readFileSync(release, 'utf8'),
    readFileSync(values.schema ?? path.join(root, 'schema.graphql'), 'utf8'),
    readFileSync(values.changelog ?? path.join(root, 'CHANGELOG.md'), 'utf8'),
  )
  if (unlisted.length > 0) {
    console.error(`schema.graphql breaks ${path.basename(release, '.graphql')} in ${unlisted.length} way(s) CHANGELOG.md's Unreleased section does not list:`)
    for (const c of unlisted) console.error(`  \`${c.path}\`: ${c.message}`)
    process.exit(1)
  }
  console.log(`schema.graphql against release ${path.basename(release, '.graphql')}: no unlisted breaking change.`)
}
