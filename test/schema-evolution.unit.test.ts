import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packageRoot } from '../src/core/paths.js'

// Decisions §15 "Evolution": a change that breaks the last release's schema fails `npm test`
// unless CHANGELOG.md's Unreleased section lists it (scripts/schema-evolution.ts, run as CI runs it).

const released = 'type Query { vault(id: ID!): Vault }\ntype Vault { id: ID!\n tvl: String!\n name: String }\n'
const changelog = (listed: string) => `# Changelog\n\n## Unreleased\n\n${listed}\n\n## 0.2.0\n\n- \`Vault.name\` (an older entry)\n`

function check(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', path.join(packageRoot, 'scripts', 'schema-evolution.ts'), ...args],
      { cwd: packageRoot },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('schema evolution check', () => {
  let dir: string
  const files = async (schema: string, log: string) => {
    await writeFile(path.join(dir, 'old.graphql'), released)
    await writeFile(path.join(dir, 'new.graphql'), schema)
    await writeFile(path.join(dir, 'CHANGELOG.md'), log)
    return ['--release', path.join(dir, 'old.graphql'), '--schema', path.join(dir, 'new.graphql'), '--changelog', path.join(dir, 'CHANGELOG.md')]
  }
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-evolution-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('passes an addition', async () => {
    const r = await check(await files(released.replace('name: String', 'name: String\n apy: Float'), changelog('')))
    expect(r).toEqual({ code: 0, stdout: 'schema.graphql against release old: no unlisted breaking change.\n', stderr: '' })
  })

  it('fails on a removed field or a field made nullable, naming each, until Unreleased lists them', async () => {
    const broken = released.replace(' tvl: String!\n name: String', ' tvl: String')
    const unlisted = await check(await files(broken, changelog('- nothing')))
    expect(unlisted.code).toBe(1)
    expect(unlisted.stderr).toBe(
      "schema.graphql breaks old in 2 way(s) CHANGELOG.md's Unreleased section does not list:\n" +
        "  `Vault.name`: Field 'name' was removed from object type 'Vault'\n" +
        "  `Vault.tvl`: Field 'Vault.tvl' changed type from 'String!' to 'String'\n",
    )
    // Listed under an older release only: still unlisted.
    expect((await check(await files(broken, changelog('- `Vault.tvl` is nullable')))).stderr).toContain('1 way(s)')
    expect((await check(await files(broken, changelog('- `Vault.tvl` is nullable; `Vault.name` is gone')))).code).toBe(0)
  })

  it('holds for this tree: schema.graphql against releases/, with this CHANGELOG', async () => {
    expect(await check([])).toEqual({ code: 0, stdout: 'schema.graphql against release 0.2.0: no unlisted breaking change.\n', stderr: '' })
  })
})
