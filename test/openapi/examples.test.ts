import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { Ajv2020 } from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RestErrorCode } from '../../src/core/errors.js'
import { packageRoot } from '../../src/core/paths.js'
import { generateDemoDataset } from '../../src/demo/dataset.js'
import { ERROR_EXAMPLES } from '../../src/openapi/document.js'
import examples from '../../src/openapi/examples.json' with { type: 'json' }
import { openApiDocument } from '../../src/openapi/operations.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'

// /docs shows real answers (scripts/openapi-examples.ts took them from a gateway serving the demo
// data) and, for each error status, an example of each code the operation documents there.

type MediaType = { schema: unknown; example?: unknown; examples?: Record<string, { value: unknown }> }
type Operation = { parameters?: { in: string; name: string; example?: unknown }[]; responses: Record<string, { content?: Record<string, MediaType> }> }

const doc = openApiDocument('test') as unknown as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } }
const operations = Object.entries(doc.paths).flatMap(([p, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method.toUpperCase()} ${p}`, op })))

function validator() {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  formats.default(ajv)
  ajv.addSchema({ $id: 'doc', components: doc.components })
  // Component references point into the document.
  return (schema: unknown, value: unknown) => {
    const check = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')))
    return check(value) ? [] : (check.errors ?? [])
  }
}

describe('the examples /docs shows', () => {
  const validate = validator()

  it("are the demo data's answers, each valid for its operation", () => {
    const shown = operations.filter(({ op }) => op.responses['200']?.content?.['application/json']?.example !== undefined)
    expect(shown.map((o) => o.key).sort()).toEqual(Object.keys(examples.responses).sort())
    for (const { key, op } of shown) {
      const media = op.responses['200']!.content!['application/json']!
      expect({ key, errors: validate(media.schema, media.example) }).toEqual({ key, errors: [] })
    }
    const demo = generateDemoDataset()
    expect(demo.vaults.map((v) => v.id)).toContain(examples.params.vault_id)
    expect(demo.transactions.some((t) => t.address.toLowerCase() === examples.params.address && t.vault_id === examples.params.vault_id)).toBe(true)
    const paths = operations.flatMap(({ op }) => (op.parameters ?? []).filter((p) => p.in === 'path' && ['vault_id', 'address'].includes(p.name)))
    expect(paths.length).toBeGreaterThan(5)
    for (const p of paths) expect(p.example).toBe(examples.params[p.name as 'vault_id' | 'address'])
  })

  it('show, for each error status, one example of each code documented there', () => {
    let seen = 0
    for (const { key, op } of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        const media = response.content?.['application/json']
        if (!/^[45]\d\d$/.test(status) || !media?.examples) continue
        const codes = [...(response as { description?: string }).description!.matchAll(/`(\w+)`/g)].map((m) => m[1])
        expect({ key, status, codes: Object.keys(media.examples) }).toEqual({ key, status, codes })
        for (const [code, { value }] of Object.entries(media.examples)) {
          expect(value).toMatchObject({ status: 'error', error: { code, message: ERROR_EXAMPLES[code as RestErrorCode] } })
          expect(validate(media.schema, value)).toEqual([])
          seen++
        }
      }
    }
    expect(seen).toBeGreaterThan(50)
  })

  it("use the gateway's own sentences", async () => {
    const sources = await Promise.all(
      (await readdir(path.join(packageRoot, 'src'), { recursive: true }))
        .filter((f) => f.endsWith('.ts') && !f.startsWith('openapi'))
        .map((f) => readFile(path.join(packageRoot, 'src', f), 'utf8')),
    )
    const all = sources.join('\n')
    for (const code of [
      'internal',
      'unavailable',
      'unauthorized',
      'not_whitelisted',
      'wallet_required',
      'wallet_not_connected',
      'unsupported_media_type',
    ] as const) {
      expect({ code, found: all.includes(ERROR_EXAMPLES[code]) }).toEqual({ code, found: true })
    }
    expect(ERROR_EXAMPLES.rate_limited).toMatch(/^Too many requests from this address; retry in \d+ s\.$/)
  })
})

describe(`the error examples are real answers (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
  })
  afterAll(() => t.close())

  it('bad_request and not_found say what the routes say', async () => {
    const error = async (url: string) => ((await (await t.request(url)).json()) as { error: unknown }).error
    expect(await error('/v1/vaults?limit=0')).toEqual({ code: 'bad_request', message: ERROR_EXAMPLES.bad_request })
    expect(await error('/v1/vaults/usdc-main')).toEqual({ code: 'not_found', message: ERROR_EXAMPLES.not_found })
  })
})
