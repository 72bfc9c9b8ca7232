import { readFileSync } from 'node:fs'
import path from 'node:path'
import { buildSchema, getNamedType, isObjectType, parse, validate, type GraphQLSchema, type OperationDefinitionNode, type SelectionSetNode } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exampleDocument, exampleIdsFromHints, exampleOperations } from '../../src/graphql/examples.js'
import { importDocument } from '../../src/importer/write.js'
import { packageRoot } from '../../src/core/paths.js'
import { testBackend } from '../support/db.js'
import { createKeysTestApp, type KeysTestApp } from '../support/keys.js'
import { subscribe } from '../support/sse.js'
import { EXPLORER_NOW, explorerDocument, fullVault, WALLET } from '../support/explorer-data.js'

// The printed SDL (kept equal to the code's schema by `npm run schema:check`), built with this file's
// graphql instance: the test runner may load the gateway's schema through another copy of graphql.
const schema = buildSchema(readFileSync(path.join(packageRoot, 'schema.graphql'), 'utf8'))

const ids = {
  vaultId: fullVault.id,
  wallet: WALLET,
  walletVaultId: fullVault.id,
  contract: { chainId: fullVault.chain_id!, address: fullVault.contract.address },
}

/** `Type.field` for every field an operation selects, at any depth (fragments aside: the examples use none). */
function selectedFields(schema: GraphQLSchema, op: OperationDefinitionNode): string[] {
  const root =
    op.operation === 'mutation' ? schema.getMutationType()! : op.operation === 'subscription' ? schema.getSubscriptionType()! : schema.getQueryType()!
  const out: string[] = []
  const walk = (set: SelectionSetNode | undefined, type: ReturnType<typeof getNamedType>) => {
    if (!set || !isObjectType(type)) return
    for (const sel of set.selections) {
      if (sel.kind !== 'Field') continue
      const field = type.getFields()[sel.name.value]
      if (!field) continue
      out.push(`${type.name}.${sel.name.value}`)
      walk(sel.selectionSet, getNamedType(field.type))
    }
  }
  walk(op.selectionSet, root)
  return out
}

describe(`GraphiQL examples (${testBackend})`, () => {
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ clock: () => EXPLORER_NOW, allowlist: [WALLET] })
    await importDocument(explorerDocument, t.db.prisma)
  })
  afterAll(() => t.close())

  it('cover every query and mutation, and every field of User', () => {
    const used = new Set(exampleOperations(ids).flatMap((e) => parse(e.query).definitions.flatMap((d) => selectedFields(schema, d as OperationDefinitionNode))))
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].flatMap((type) =>
      type ? Object.keys(type.getFields()).map((f) => `${type.name}.${f}`) : [],
    )
    const user = schema.getType('User')
    const userFields = isObjectType(user) ? Object.keys(user.getFields()).map((f) => `User.${f}`) : []
    expect([...roots, ...userFields].filter((f) => !used.has(f))).toEqual([])
  })

  it('validate against the schema and run without errors on real data (key operations with a real wallet session)', async () => {
    const answers: Record<string, unknown> = {}
    for (const example of exampleOperations(ids)) {
      const document = parse(example.query)
      const name = (document.definitions[0] as OperationDefinitionNode).name!.value
      expect(validate(schema, document).map((e) => e.message)).toEqual([])
      // The documented headers name a wallet-session token; the test signs a real one.
      if (example.headers) expect(example.headers).toEqual({ Authorization: 'Bearer <WALLET_SESSION_JWT>' })
      const headers = example.headers ? await t.session([WALLET]) : {}
      if ((document.definitions[0] as OperationDefinitionNode).operation === 'subscription') {
        // Subscribed over SSE: the stream opens (its errors would be its first event).
        const s = await subscribe((url, init) => t.app.fetch(new Request(url, init)), 'http://vaultgate.test/graphql', example.query, {}, headers)
        expect(s.status, name).toBe(200)
        s.close()
        continue
      }
      const res = await t.graphql(example.query, undefined, headers)
      expect(res.body.errors, name).toBeUndefined()
      expect(res.status).toBe(200)
      answers[name] = res.body.data
    }
    expect(answers.CreateApiKey).toMatchObject({ createApiKey: { keyPrefix: 'my-desk', apiKey: expect.stringMatching(/^my-desk_/) } })
    expect(answers.RevokeApiKey).toEqual({ revokeApiKey: { revoked: true } })
    expect(answers.VaultByAddress).toEqual({
      vaultByAddress: {
        id: fullVault.id,
        name: 'Alpha USDC',
        chainId: '1',
        caip10: 'eip155:1:0x1111111111111111111111111111111111111111',
        contract: { address: fullVault.contract.address },
      },
    })
  })

  it('explain the headers of every operation that needs them', () => {
    for (const example of exampleOperations(ids).filter((e) => e.headers)) {
      expect(example.query).toContain('"Authorization": "Bearer <WALLET_SESSION_JWT>"')
      expect(example.query).toContain('"X-Service-Wallet": "0x…"')
    }
    expect(exampleOperations(ids).filter((e) => e.headers).length).toBe(6)
  })

  it('give the wallet example real answers with the demo ids', async () => {
    const wallet = exampleOperations(ids).find((e) => e.query.includes('query Wallet'))!
    const { body } = await t.graphql(wallet.query)
    expect(body.data.user.transactions.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(['tx-4', 'tx-3', 'tx-2', 'tx-1'])
    expect(body.data.user.position).toMatchObject({
      vaultId: fullVault.id,
      shareBalance: '1190',
      totalDeposits: '1500',
      firstDepositAt: '2026-11-16T12:30:00.000Z',
    })
  })

  it('open in the bundled GraphiQL as one document, with nothing loaded from elsewhere', async () => {
    const res = await t.request('/graphql', { headers: { accept: 'text/html' } })
    expect(res.status).toBe(200)
    const html = await res.text()
    const options = JSON.parse(/renderYogaGraphiQL\([^,]+, (\{.*\})\);/.exec(html)![1]!)
    expect(options.defaultQuery).toBe(exampleDocument())
    expect(parse(exampleDocument()).definitions.map((d) => (d as OperationDefinitionNode).name?.value)).toEqual(
      exampleOperations().map((e) => (parse(e.query).definitions[0] as OperationDefinitionNode).name?.value),
    )
    expect(html).not.toMatch(/<script[^>]+src="https?:/)
    expect(html).not.toMatch(/<link[^>]+href="https?:/)
  })

  it('lead with what a dashboard reads first: vaults by tvlUsd with APYs, a performance chart, a search', async () => {
    const first = exampleOperations(ids).slice(0, 3)
    expect(first.map((e) => (parse(e.query).definitions[0] as OperationDefinitionNode).name?.value)).toEqual(['VaultTable', 'Performance', 'SearchVaults'])
    const fields = new Set(first.flatMap((e) => parse(e.query).definitions.flatMap((d) => selectedFields(schema, d as OperationDefinitionNode))))
    for (const f of ['Vault.performance', 'Vault.performanceSeries', 'Vault.tvlUsd', 'VaultPerformance.apy7d', 'PerformanceSeries.points'])
      expect(fields).toContain(f)
    const text = first.map((e) => e.query).join('\n')
    expect(text).toContain('orderBy: { field: tvlUsd, direction: desc }')
    expect(text).toContain('search: "usd"')
    const search = await t.graphql(first[2]!.query)
    expect(search.body.data.vaults.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([fullVault.id])
    const performance = await t.graphql(first[1]!.query)
    expect(performance.body.errors).toBeUndefined()
    expect(performance.body.data.vault.performanceSeries.timeframe).toBe('P30D')
  })

  it('serve a small page whose bundle is a separate, compressed, immutable asset', async () => {
    // Asked without Accept-Encoding: app.fetch hands back the bytes as sent (a page over the
    // compression threshold would come back brotli-encoded and unreadable here).
    const page = await t.request('/graphql', { headers: { accept: 'text/html' } })
    const html = await page.text()
    // The page renderGraphiQL writes inlines ~9 MB; the shell holds the example document and links.
    expect(Buffer.byteLength(html)).toBeLessThan(32 * 1024)
    const assets = [...html.matchAll(/(?:src|href)="(\/graphiql\/[^"]+)"/g)].map((m) => m[1]!)
    expect(assets.map((a) => a.replace(/^\/graphiql\/[^/]+\//, ''))).toEqual(['favicon.ico', 'graphiql.css', 'graphiql.js'])
    for (const asset of assets) {
      const res = await t.request(asset, { headers: { 'accept-encoding': 'br, gzip' } })
      expect(res.status, asset).toBe(200)
      expect(res.headers.get('content-encoding')).toBe('br')
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      const etag = res.headers.get('etag')!
      expect((await t.request(asset, { headers: { 'accept-encoding': 'br', 'if-none-match': etag } })).status).toBe(304)
    }
    const js = await t.request(assets[2]!)
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    const script = await js.text()
    expect(script.length).toBeGreaterThan(4_000_000)
    expect(script).toContain('renderYogaGraphiQL')
  })

  it('take their ids from the demo data hints', () => {
    const hints = {
      vaultIds: ['a-vault', 'b-vault'],
      wallets: [
        { address: '0x00000000000000000000000000000000000000aa', vaultId: 'b-vault', note: 'pending redeems in b-vault' },
        { address: '0x00000000000000000000000000000000000000bb', vaultId: 'a-vault', note: 'open position, 12 transactions' },
      ],
    }
    expect(exampleIdsFromHints(hints)).toEqual({ vaultId: 'a-vault', wallet: '0x00000000000000000000000000000000000000bb', walletVaultId: 'a-vault' })
    const contract = { vaultId: 'b-vault', chainId: '8453', address: '0x00000000000000000000000000000000000000cc' }
    expect(exampleIdsFromHints({ ...hints, contract })).toMatchObject({ contract: { chainId: '8453', address: contract.address } })
    expect(exampleOperations(exampleIdsFromHints({ ...hints, contract })).find((e) => e.query.includes('query VaultByAddress'))!.query).toContain(
      `vaultByAddress(chainId: "eip155:8453", address: "${contract.address}")`,
    )
  })
})
