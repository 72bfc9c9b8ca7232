// Compiles the test contracts (test/sources/contracts/*.sol) with solc-js from npm and writes one
// artifact per contract (ABI + creation and runtime bytecode) to test/sources/contracts/artifacts/.
// The artifacts are committed, so the tests need no compiler step; a unit test recompiles and
// checks they are current.
//
//   npx tsx scripts/compile-contracts.ts           write the artifacts
//   npx tsx scripts/compile-contracts.ts --check   exit 1 when a committed artifact is stale
import { readFileSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const contractsDir = path.join(root, 'test', 'sources', 'contracts')
export const artifactsDir = path.join(contractsDir, 'artifacts')

export interface Artifact {
  contractName: string
  sourceName: string
  compiler: string
  abi: unknown[]
  bytecode: `0x${string}`
  deployedBytecode: `0x${string}`
}

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string; sourceLocation?: { file: string } }[]
  contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>
}

// Pinned so the bytecode does not depend on the compiler's default target; anvil runs later forks.
// No metadata hash: the bytecode then depends on the sources and settings only, not on file paths.
const settings = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  metadata: { bytecodeHash: 'none', appendCBOR: false },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
}

/** Resolves `@openzeppelin/...` imports from node_modules for solc's import callback. */
function findImport(importPath: string): { contents: string } | { error: string } {
  try {
    return { contents: readFileSync(require.resolve(importPath), 'utf8') }
  } catch {
    return { error: `not found: ${importPath}` }
  }
}

/** Compiles every contract of test/sources/contracts; throws with solc's messages on an error. */
export async function compileContracts(): Promise<Artifact[]> {
  const solc = require('solc') as { compile(input: string, callbacks: { import: typeof findImport }): string; version(): string }
  const files = (await readdir(contractsDir)).filter((f) => f.endsWith('.sol')).sort()
  const sources = Object.fromEntries(await Promise.all(files.map(async (f) => [f, { content: await readFile(path.join(contractsDir, f), 'utf8') }] as const)))
  const output = JSON.parse(solc.compile(JSON.stringify({ language: 'Solidity', sources, settings }), { import: findImport })) as SolcOutput
  // Warnings in our own sources fail too: they are small enough to keep clean. OpenZeppelin's
  // ERC4626 warns of unreachable code because the async vault's previews always revert (ERC-7540).
  const ours = (e: { sourceLocation?: { file: string } }) => !e.sourceLocation?.file.startsWith('@openzeppelin/')
  const problems = (output.errors ?? []).filter((e) => e.severity === 'error' || (e.severity === 'warning' && ours(e)))
  if (problems.length > 0) throw new Error(`solc:\n${problems.map((e) => e.formattedMessage).join('\n')}`)
  const artifacts: Artifact[] = []
  for (const sourceName of files) {
    for (const [contractName, c] of Object.entries(output.contracts[sourceName] ?? {})) {
      artifacts.push({
        contractName,
        sourceName,
        compiler: solc.version(),
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      })
    }
  }
  return artifacts
}

export const artifactPath = (contractName: string) => path.join(artifactsDir, `${contractName}.json`)
export const serialize = (a: Artifact) => `${JSON.stringify(a, null, 2)}\n`

async function main() {
  const check = process.argv.includes('--check')
  const artifacts = await compileContracts()
  await mkdir(artifactsDir, { recursive: true })
  let stale = 0
  for (const a of artifacts) {
    const file = artifactPath(a.contractName)
    const text = serialize(a)
    const current = await readFile(file, 'utf8').catch(() => '')
    if (current === text) continue
    if (check) {
      stale++
      console.error(`stale: ${path.relative(root, file)}`)
    } else {
      await writeFile(file, text)
      console.log(`wrote ${path.relative(root, file)}`)
    }
  }
  if (stale > 0) {
    console.error('run: npm run contracts:compile')
    process.exitCode = 1
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main()
