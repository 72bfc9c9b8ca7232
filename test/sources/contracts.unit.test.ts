import { readdir, readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { artifactPath, artifactsDir, compileContracts, serialize } from '../../scripts/compile-contracts.js'

// The committed artifacts (ABI + bytecode) are what the anvil suites deploy: they must be what the
// sources compile to. When this fails: npm run contracts:compile

describe('test contracts', () => {
  it('the committed artifacts are those the sources compile to with the pinned solc-js', async () => {
    const artifacts = await compileContracts()
    expect(artifacts.map((a) => a.contractName).sort()).toEqual(['AsyncRedeemVault', 'Multicall3Subset', 'TestAsset', 'TestVault'])
    expect((await readdir(artifactsDir)).sort()).toEqual(artifacts.map((a) => `${a.contractName}.json`).sort())
    for (const a of artifacts) expect(await readFile(artifactPath(a.contractName), 'utf8'), `${a.contractName}.json is stale`).toBe(serialize(a))
  })
})
