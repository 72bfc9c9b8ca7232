import { describe, expect, it } from 'vitest'
import { commands } from '../src/cli.js'
import { runCli } from './support/process.js'

describe('vaultgate --help', () => {
  it('lists every command with its summary, in the order they are defined', async () => {
    const r = await runCli(['--help'])
    expect(r.code).toBe(0)
    const listed = r.stdout.split('\n').filter((l) => l.startsWith('  vaultgate '))
    expect(listed.map((l) => l.trim().split(/\s{2,}/))).toEqual(Object.values(commands).map((c) => [c.usage, c.summary]))
  })
})
