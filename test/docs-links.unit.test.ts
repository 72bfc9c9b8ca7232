import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { packageRoot } from '../src/core/paths.js'

// The README is a front page and the documentation lives in docs/ (issue 30): a section moved
// from one page to another must not leave a link behind that leads nowhere. Every relative link
// (and image) in README.md and docs/**/*.md must name an existing file, and its #anchor a heading
// of that page, as GitHub renders them.

/** Blanks fenced code blocks (``` or ~~~), keeping line numbers: nothing in them is a link or a heading. */
function withoutFences(text: string): string[] {
  let fence: string | null = null
  return text.split('\n').map((line) => {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(line)
    if (open) {
      if (fence === null) fence = open[1]!
      else if (open[1]!.startsWith(fence) && line.trim() === open[1]) fence = null
      return ''
    }
    return fence === null ? line : ''
  })
}

/** GitHub's anchor for a heading: its text lowercased, punctuation but `-` and `_` dropped, spaces as `-`. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image counts by its text
    .replace(/<[^>]+>/g, '') // inline HTML tags render as nothing
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors of a page: its headings' slugs (a repeated one numbered `-1`, `-2`, …) and HTML ids. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>()
  const found = new Set<string>()
  for (const line of withoutFences(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)
    if (heading) {
      const base = slug(heading[1]!)
      const n = seen.get(base) ?? 0
      seen.set(base, n + 1)
      found.add(n === 0 ? base : `${base}-${n}`)
    }
    for (const [, id] of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) found.add(id!)
  }
  return found
}

/** Relative link targets of a page with their line numbers: inline links and images, and reference definitions. */
function links(text: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = []
  withoutFences(text).forEach((raw, i) => {
    const line = raw.replace(/(`+)[^`]*?\1/g, '') // code spans hold examples, not links
    const targets = [
      ...[...line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
      ...[...line.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/g)].map((m) => m[1]!),
    ]
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:|^\/\//i.test(target)) continue // http:, mailto:, …: not ours to check
      out.push({ line: i + 1, target })
    }
  })
  return out
}

/** Every Markdown page under `root` this test covers: README.md and docs/**.md. */
function pages(root: string): string[] {
  const docs = path.join(root, 'docs')
  const inDocs = existsSync(docs)
    ? readdirSync(docs, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.md'))
        .map((f) => path.join('docs', f))
    : []
  return [...(existsSync(path.join(root, 'README.md')) ? ['README.md'] : []), ...inDocs].sort()
}

/** `file:line target (why)` for each link of `file` (relative to `root`) that leads nowhere. */
function brokenLinks(root: string, file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8')
  const broken: string[] = []
  for (const { line, target } of links(text)) {
    const hash = target.indexOf('#')
    const pathPart = decodeURI(hash === -1 ? target : target.slice(0, hash))
    const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1))
    const resolved = pathPart === '' ? path.join(root, file) : path.resolve(path.dirname(path.join(root, file)), pathPart)
    const where = `${file}:${line} ${target}`
    if (!existsSync(resolved)) broken.push(`${where} (no such file)`)
    else if (anchor !== null && resolved.endsWith('.md') && statSync(resolved).isFile() && !anchors(readFileSync(resolved, 'utf8')).has(anchor)) {
      broken.push(`${where} (no heading #${anchor} in ${path.relative(root, resolved)})`)
    }
  }
  return broken
}

describe('slug: GitHub heading anchors', () => {
  it.each([
    ['Wallet reads: history, pending redeems, positions', 'wallet-reads-history-pending-redeems-positions'],
    ['Decisions (where the spec is silent)', 'decisions-where-the-spec-is-silent'],
    ['vaultgate — performance history', 'vaultgate--performance-history'],
    ['`HOT_PATH` and the [hot path](adr/0004-hot-path.md)', 'hot_path-and-the-hot-path'],
    ['Compose: PostgreSQL, Redis, two replicas', 'compose-postgresql-redis-two-replicas'],
  ])('%s → #%s', (heading, expected) => {
    expect(slug(heading)).toBe(expected)
  })
})

describe('the checker', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'vaultgate-docs-links-'))
  afterAll(() => rmSync(root, { recursive: true, force: true }))

  it('reports a missing file, a missing heading and a repeated heading past its count, and nothing else', () => {
    mkdirSync(path.join(root, 'docs', 'api'), { recursive: true })
    writeFileSync(
      path.join(root, 'README.md'),
      [
        '# Front',
        '## Tour',
        '[ok](docs/api/x.md#usage-1) [ok](#tour) [ok](docs/api/x.md) [web](https://example.com/nowhere)',
        '[gone](docs/y.md) [no heading](docs/api/x.md#usage-2) `[in code](nowhere.md)`',
        '```',
        '[in a fence](nowhere.md)',
        '```',
        '[ref]: docs/missing.md',
      ].join('\n'),
    )
    writeFileSync(path.join(root, 'docs', 'api', 'x.md'), ['# X', '## Usage', '## Usage', '[up](../../README.md#front) [bad up](../README.md)'].join('\n'))
    expect(pages(root)).toEqual(['README.md', path.join('docs', 'api', 'x.md')])
    expect(pages(root).flatMap((f) => brokenLinks(root, f))).toEqual([
      'README.md:4 docs/y.md (no such file)',
      'README.md:4 docs/api/x.md#usage-2 (no heading #usage-2 in docs/api/x.md)',
      'README.md:8 docs/missing.md (no such file)',
      `${path.join('docs', 'api', 'x.md')}:4 ../README.md (no such file)`,
    ])
  })
})

describe('links in README.md and docs/', () => {
  const files = pages(packageRoot)

  it('covers the front page and the topic pages', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', path.join('docs', 'configuration.md'), path.join('docs', 'api', 'vaults.md')]))
  })

  it.each(files)('%s: every relative link and anchor resolves', (file) => {
    expect(brokenLinks(packageRoot, file)).toEqual([])
  })
})
