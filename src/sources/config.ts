import { readFile } from 'node:fs/promises'
import { z } from 'zod'
import { consistencyIssues, formatPath, type ImportVault, type Issue, importShapes, zodIssues } from '../importer/document.js'
import { normalizeAddress } from '../wallets/address.js'
import { isJsonObject } from '../core/formats.js'

// VAULT_SOURCES_FILE (decisions §12): the chains to follow and the vaults on them. The vault
// metadata that is not on chain (name, fees, constraints, icons, …) is checked by the importer's
// own vault rules (its schema and cross-row rules, in its words), so a vault reads the same whether
// it was imported or followed on chain.
//
// Beyond §12, a chain may set `multicall3_address` (null: never use multicall; absent: viem's chain
// definition, else a probe of the canonical address), `requests_per_second` (the request budget,
// default 10) and `max_block_range` (the largest eth_getLogs range tried, default 2000).

export type Address = `0x${string}`
export type VaultKind = 'erc4626' | 'erc7540'

export interface SourceChain {
  name: string
  chain_id: number
  rpc_url: string
  confirmations: number
  poll_interval_ms: number
  /** undefined: not configured (use viem's chain definition or probe); null: switched off. */
  multicall3_address: Address | null | undefined
  requests_per_second: number
  max_block_range: number
}

/** The vault fields of the spec's Vault shape that come from the file, in the importer's canonical form. */
export type VaultMetadata = Omit<ImportVault, 'id' | 'chain' | 'chain_id' | 'contract' | 'tvl' | 'share_price' | 'base_asset_price_usd'> & {
  /** Not on chain; null when the file does not say. */
  base_asset_price_usd: string | null
}

export interface SourceVault {
  id: string
  /** The chain's name: a key of `chains`. */
  chain: string
  chain_id: number
  /** Lowercase. */
  address: Address
  kind: VaultKind
  from_block: number
  snapshot_interval_ms: number
  metadata: VaultMetadata
}

export interface SourcesConfig {
  chains: Record<string, SourceChain>
  vaults: SourceVault[]
}

export const SOURCE_DEFAULTS = {
  confirmations: 2,
  poll_interval_ms: 4000,
  snapshot_interval_ms: 3_600_000,
  requests_per_second: 10,
  max_block_range: 2000,
} as const

export interface SourcesProblem {
  /** A JSON path into the file (`vaults[2].kind`); absent for the file as a whole (unreadable, not JSON). */
  path?: string
  message: string
}

export class SourcesConfigError extends Error {
  /** One line per problem: `path: message`. */
  readonly issues: string[]

  constructor(
    readonly problems: SourcesProblem[],
    where = 'sources file',
  ) {
    const issues = problems.map((p) => (p.path === undefined ? p.message : `${p.path}: ${p.message}`))
    super(`Invalid ${where}:\n${issues.map((i) => `  ${i}`).join('\n')}`)
    this.name = 'SourcesConfigError'
    this.issues = issues
  }
}

const problemsOf = (issues: Issue[]): SourcesProblem[] => issues.map((i) => ({ path: formatPath(i.path), message: i.message }))

type Checked<T> = { ok: true; value: T } | { ok: false; error: string }
type Check<T> = (input: unknown) => Checked<T>
const ok = <T>(value: T): Checked<T> => ({ ok: true, value })
const fail = (error: string): Checked<never> => ({ ok: false, error })

// As in the importer: each scalar is checked by hand so the message is a sentence about the field.
function field<T>(check: Check<T>, fallback?: T) {
  return z
    .unknown()
    .optional()
    .transform((input, ctx): T => {
      if (input === undefined && fallback !== undefined) return fallback
      const r = input === undefined ? fail('is required') : check(input)
      if (r.ok) return r.value
      ctx.addIssue({ code: 'custom', message: r.error })
      return z.NEVER
    })
}

const integer =
  (min: number, max = Number.MAX_SAFE_INTEGER): Check<number> =>
  (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? ok(v) : fail(`must be an integer from ${min} to ${max}`)

const address: Check<Address> = (v) => {
  const normalized = normalizeAddress(v)
  return normalized === undefined ? fail('must be an EVM address (0x followed by 40 hex digits)') : ok(normalized as Address)
}

const nullableAddress: Check<Address | null> = (v) => (v === null ? ok(null) : address(v))

const rpcUrl: Check<string> = (v) => {
  if (typeof v !== 'string') return fail('must be a string')
  try {
    const url = new URL(v)
    if (url.protocol === 'http:' || url.protocol === 'https:') return ok(v)
  } catch {
    // falls through to the message below; the value itself is never echoed (it may carry a key)
  }
  return fail('must be an http:// or https:// URL')
}

const kind: Check<VaultKind> = (v) => (v === 'erc4626' || v === 'erc7540' ? ok(v) : fail('must be one of "erc4626", "erc7540"'))

const positive: Check<number> = (v) =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= 100_000 ? ok(v) : fail('must be a number above 0 and at most 100000')

const CHAIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/

const chainSchema = z.strictObject({
  chain_id: field(integer(1)),
  rpc_url: field(rpcUrl),
  confirmations: field(integer(0, 10_000), SOURCE_DEFAULTS.confirmations),
  poll_interval_ms: field(integer(100, 3_600_000), SOURCE_DEFAULTS.poll_interval_ms),
  multicall3_address: z
    .unknown()
    .optional()
    .transform((input, ctx): Address | null | undefined => {
      if (input === undefined) return undefined
      const r = nullableAddress(input)
      if (r.ok) return r.value
      ctx.addIssue({ code: 'custom', message: `${r.error}, or null` })
      return z.NEVER
    }),
  requests_per_second: field(positive, SOURCE_DEFAULTS.requests_per_second),
  max_block_range: field(integer(1, 1_000_000), SOURCE_DEFAULTS.max_block_range),
})

/** The vault fields this file adds to the Vault shape; every other key is vault metadata. */
const SOURCE_FIELDS = ['chain', 'address', 'kind', 'from_block', 'snapshot_interval_ms'] as const

const vaultSourceSchema = z.object({
  chain: field((v) => (typeof v === 'string' && v.length > 0 ? ok(v) : fail('must be the name of one of the chains'))),
  address: field(address),
  kind: field(kind),
  from_block: field(integer(0)),
  snapshot_interval_ms: field(integer(1000, 365 * 86_400_000), SOURCE_DEFAULTS.snapshot_interval_ms),
})

/** Values the follower reads from the chain or the chain entry; the file must not set them. */
const NOT_CONFIGURABLE: Record<string, string> = {
  tvl: 'is read from the chain, not configured',
  share_price: 'is read from the chain, not configured',
  contract: 'is the vault\'s "address"',
  chain_id: 'comes from the chain entry',
}

const documentSchema = z.strictObject({
  chains: z.record(z.string(), z.unknown()),
  vaults: z.array(z.unknown()),
})

/** The importer's vault record schema: the metadata is checked by its rules. */
const importVaultSchema = z.strictObject(importShapes.vaults)

/** The importer's sentences for zod's issues, at `prefix` in this file. */
const issuesAt = (prefix: readonly PropertyKey[], error: z.ZodError): Issue[] => zodIssues(error).map((i) => ({ ...i, path: [...prefix, ...i.path] }))

const PLACEHOLDER_ADDRESS = `0x${'0'.repeat(40)}`

/**
 * A vault record for the importer's validation: the file's metadata, with placeholders where the
 * values come from the chain (they are not the file's to set, and are checked apart).
 */
function importerCandidate(metadata: Record<string, unknown>, chain: string): Record<string, unknown> {
  return {
    // All their fields are optional (spec: "all fields optional, each nullable"), so the objects are too.
    deposit_constraints: {},
    withdraw_constraints: {},
    icons: {},
    ...metadata,
    chain,
    chain_id: null,
    contract: { address: PLACEHOLDER_ADDRESS },
    tvl: '0',
    share_price: '0',
    base_asset_price_usd: metadata.base_asset_price_usd ?? '0',
  }
}

/**
 * Validates a parsed sources file and returns it with defaults applied, addresses lowercase and
 * the vault metadata in the importer's canonical form. Throws SourcesConfigError listing every
 * problem with its JSON path (`vaults[2].kind: must be one of "erc4626", "erc7540"`); the metadata
 * problems come from the importer's rules, in its words, after the file's own.
 */
export function parseSourcesConfig(input: unknown, where?: string): SourcesConfig {
  const doc = documentSchema.safeParse(input, { reportInput: true })
  if (!doc.success) throw new SourcesConfigError(problemsOf(issuesAt([], doc.error)), where)

  const issues: Issue[] = []
  const chains: Record<string, SourceChain> = {}
  const chainNameOf = new Map<number, string>()
  for (const [name, raw] of Object.entries(doc.data.chains)) {
    if (!CHAIN_NAME.test(name))
      issues.push({ path: ['chains', name], message: 'the name must be 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit' })
    const parsed = chainSchema.safeParse(raw, { reportInput: true })
    if (!parsed.success) {
      issues.push(...issuesAt(['chains', name], parsed.error))
      continue
    }
    const c = parsed.data
    const other = chainNameOf.get(c.chain_id)
    if (other !== undefined) issues.push({ path: ['chains', name, 'chain_id'], message: `is also the chain_id of chains.${other}` })
    else chainNameOf.set(c.chain_id, name)
    chains[name] = { name, ...c }
  }

  const sources: (z.infer<typeof vaultSourceSchema> | undefined)[] = []
  const vaults: (ImportVault | undefined)[] = []
  const importerIssues: Issue[] = []
  const seenAddress = new Map<string, number>()
  doc.data.vaults.forEach((raw, i) => {
    if (!isJsonObject(raw)) {
      issues.push({ path: ['vaults', i], message: 'must be an object' })
      sources.push(undefined)
      vaults.push(undefined)
      return
    }
    const parsed = vaultSourceSchema.safeParse(raw, { reportInput: true })
    const source = parsed.success ? parsed.data : undefined
    if (!parsed.success) issues.push(...issuesAt(['vaults', i], parsed.error))
    const chainName = typeof raw.chain === 'string' ? raw.chain : undefined
    // Named against every chain entry, valid or not: a broken chain entry is reported on its own.
    if (chainName !== undefined && chainName.length > 0 && !Object.hasOwn(doc.data.chains, chainName))
      issues.push({
        path: ['vaults', i, 'chain'],
        message: `must be the name of one of the chains (${Object.keys(doc.data.chains).join(', ') || 'none configured'})`,
      })
    for (const [key, message] of Object.entries(NOT_CONFIGURABLE)) if (key in raw) issues.push({ path: ['vaults', i, key], message })
    if (source) {
      const key = `${source.chain}\u0000${source.address}`
      const first = seenAddress.get(key)
      if (first !== undefined) issues.push({ path: ['vaults', i, 'address'], message: `is also the address of vaults[${first}] on ${source.chain}` })
      else seenAddress.set(key, i)
    }
    const metadata = Object.fromEntries(Object.entries(raw).filter(([k]) => !(SOURCE_FIELDS as readonly string[]).includes(k) && !(k in NOT_CONFIGURABLE)))
    const vault = importVaultSchema.safeParse(importerCandidate(metadata, chainName && chainName.length > 0 ? chainName : 'unknown'), { reportInput: true })
    if (!vault.success) importerIssues.push(...issuesAt(['vaults', i], vault.error))
    vaults.push(vault.success ? vault.data : undefined)
    sources.push(source)
  })
  // The importer's rules across records (ids once, min_deposit ≤ max_deposit) once every record is valid, as it does.
  if (importerIssues.length === 0 && vaults.every((v) => v !== undefined))
    importerIssues.push(...consistencyIssues({ vaults: vaults as ImportVault[], compositions: [], vault_snapshots: [], transactions: [] }))

  if (issues.length + importerIssues.length > 0) throw new SourcesConfigError(problemsOf([...issues, ...importerIssues]), where)

  return {
    chains,
    vaults: (vaults as ImportVault[]).map((v, i) => {
      const s = sources[i]!
      const raw = doc.data.vaults[i] as Record<string, unknown>
      const { id, chain: _chain, chain_id: _chainId, contract: _contract, tvl: _tvl, share_price: _price, base_asset_price_usd, ...rest } = v
      return {
        id,
        chain: s.chain,
        chain_id: chains[s.chain]!.chain_id,
        address: s.address,
        kind: s.kind,
        from_block: s.from_block,
        snapshot_interval_ms: s.snapshot_interval_ms,
        metadata: { ...rest, base_asset_price_usd: raw.base_asset_price_usd === undefined || raw.base_asset_price_usd === null ? null : base_asset_price_usd },
      }
    }),
  }
}

/** Reads and validates the file named by VAULT_SOURCES_FILE. */
export async function loadSourcesFile(file: string): Promise<SourcesConfig> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    throw new SourcesConfigError(
      [{ message: code === 'ENOENT' ? 'the file does not exist' : `the file cannot be read (${code ?? 'error'})` }],
      `sources file ${file}`,
    )
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    throw new SourcesConfigError([{ message: `not valid JSON: ${(e as Error).message}` }], `sources file ${file}`)
  }
  return parseSourcesConfig(json, `sources file ${file}`)
}

/**
 * The vault in the importer's record shape, with live values from the chain. `base_asset_price_usd`
 * stays null when the file does not give one (the vaults table wants a value: the writing step decides).
 */
export function vaultRecord(
  vault: SourceVault,
  live: { tvl: string; share_price: string },
): Omit<ImportVault, 'base_asset_price_usd'> & { base_asset_price_usd: string | null } {
  return {
    ...vault.metadata,
    id: vault.id,
    chain: vault.chain,
    chain_id: String(vault.chain_id),
    contract: { address: vault.address },
    tvl: live.tvl,
    share_price: live.share_price,
  }
}
