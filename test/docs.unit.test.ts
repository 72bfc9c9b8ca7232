import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../src/core/paths.js'

// The specification and the product decisions are vendored into docs/spec/ so that the code's
// "docs/spec/decisions.md §N" references resolve inside the repository; ../shared/spec/ (beside a
// developer's checkout) stays the source. Where it exists, the copies must match it.
const source = path.join(packageRoot, '..', 'shared', 'spec')

describe('vendored specification', () => {
  for (const file of ['vault-api-spec.md', 'decisions.md']) {
    it(`docs/spec/${file} is present`, () => {
      expect(existsSync(path.join(packageRoot, 'docs', 'spec', file))).toBe(true)
    })
    it.runIf(existsSync(path.join(source, file)))(`docs/spec/${file} matches ../shared/spec/${file} (re-copy it when the source changes)`, () => {
      expect(readFileSync(path.join(packageRoot, 'docs', 'spec', file), 'utf8')).toBe(readFileSync(path.join(source, file), 'utf8'))
    })
  }
})
