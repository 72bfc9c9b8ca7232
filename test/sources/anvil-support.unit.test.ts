import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../../src/core/paths.js'
import { ANVIL_BIN, anvilSkipReason, anvilSuiteTitle } from '../support/anvil.js'

// When the anvil suites run, skip, or fail: the npm registry here serves only the linux x64 binary.

describe('anvil availability', () => {
  const missing = path.join(packageRoot, 'node_modules', '.no-such-anvil')

  it('runs on linux x64 with the binary installed', () => {
    expect(anvilSkipReason({ platform: 'linux-x64', bin: ANVIL_BIN, ci: '' })).toBeUndefined()
  })

  it('skips elsewhere with the reason in the suite title, CI or not', () => {
    const reason = anvilSkipReason({ platform: 'darwin-arm64', bin: missing, ci: 'true' })
    expect(reason).toBe('anvil suites need linux x64 (the npm package @foundry-rs/anvil-linux-amd64); this is darwin-arm64')
    expect(anvilSuiteTitle('chain source', reason)).toBe(`chain source [skipped: ${reason}]`)
    expect(anvilSuiteTitle('chain source', undefined)).toBe('chain source')
  })

  it('skips when the binary is missing, but fails under CI', () => {
    // ci: '' rather than undefined: an undefined property takes the default, process.env.CI, which
    // CI sets (the first CI run of this test failed on exactly that).
    expect(anvilSkipReason({ platform: 'linux-x64', bin: missing, ci: '' })).toBe('anvil binary missing at node_modules/.no-such-anvil: run npm ci')
    expect(() => anvilSkipReason({ platform: 'linux-x64', bin: missing, ci: 'true' })).toThrow(
      'anvil binary missing at node_modules/.no-such-anvil: run npm ci (CI must run the anvil suites)',
    )
  })
})
