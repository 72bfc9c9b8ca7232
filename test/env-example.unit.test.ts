import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { configVariables, loadConfig } from '../src/config.js'
import { packageRoot } from '../src/core/paths.js'

const read = (file: string) => readFileSync(path.join(packageRoot, file), 'utf8')

/** `#NAME=value` lines of .env.example: every setting, commented out at its default. */
const settings = [...read('.env.example').matchAll(/^#([A-Z][A-Z0-9_]*)=(.*)$/gm)].map(([, name, value]) => ({ name: name!, value: value! }))

describe('.env.example', () => {
  it('lists every variable the configuration reads, once, and nothing else', () => {
    expect(settings.map((s) => s.name).sort()).toEqual([...configVariables].sort())
  })

  it('shows each default as the configuration applies it (setting it changes nothing)', () => {
    const defaults = loadConfig({})
    for (const { name, value } of settings.filter((s) => s.value !== '')) {
      expect(loadConfig({ [name]: value }), `${name}=${value}`).toEqual(defaults)
    }
  })

  it('gives each one its meaning on the line above', () => {
    const lines = read('.env.example').split('\n')
    for (const { name } of settings) {
      let i = lines.findIndex((l) => l.startsWith(`#${name}=`)) - 1
      while (/^#[A-Z][A-Z0-9_]*=/.test(lines[i] ?? '')) i-- // settings described together (AUTH_ISSUER, AUTH_AUDIENCE)
      expect(lines[i], name).toMatch(/^# \S.{10,}/)
    }
  })
})

describe('docs/configuration.md', () => {
  it('has a row for every variable the configuration reads', () => {
    const page = read('docs/configuration.md')
    const table = page.slice(page.indexOf('# Configuration'), page.indexOf('## Storage modes'))
    const names = [...table.matchAll(/^\| ([^|]+)\|/gm)].flatMap(([, cell]) => [...cell!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map(([, n]) => n!))
    expect([...new Set(names)].sort()).toEqual([...configVariables].sort())
  })
})
