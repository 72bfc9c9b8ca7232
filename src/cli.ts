import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { addToAllowlist, listAllowlist, removeFromAllowlist } from './keys/allowlist.js'
import { normalizeAddress } from './wallets/address.js'
import { systemClock } from './core/clock.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { DataDirBusyError, readLock } from './db/embedded-lock.js'
import { createLogger, setLogger } from './core/log.js'
import { createProgress } from './core/progress.js'
import { applyRuntimeFlags } from './core/runtime-flags.js'
import { BootError, prepareDatabase, startGateway } from './server.js'

// The CLI prints for people: plain sentences on stdout/stderr, exit code 0 on success, 1 on a
// failure it can explain, 2 on a usage error. Never a stack trace unless DEBUG is set.

class UsageError extends Error {}

interface Command {
  usage: string
  summary: string
  run(args: string[], config: Config): Promise<void>
}

const out = (line: string) => process.stdout.write(`${line}\n`)

/** In embedded mode, the URL of a gateway that holds the data directory right now. */
async function runningGateway(config: Config): Promise<string | undefined> {
  if (config.storage.mode !== 'embedded' || config.storage.dataDir.startsWith('memory://')) return undefined
  const holder = await readLock(config.storage.dataDir)
  if (!holder) return undefined
  if (!holder.url) throw new DataDirBusyError(config.storage.dataDir, holder)
  return holder.url
}

/** Calls a running gateway's admin API (used when it owns the embedded data directory). */
export async function callAdmin(config: Config, url: string, method: string, path: string, body?: string): Promise<unknown> {
  if (!config.adminToken) {
    throw new BootError(
      `The data directory is in use by the gateway at ${url}; set ADMIN_TOKEN (the same as the gateway's) so this command can use its admin API, or stop the gateway.`,
    )
  }
  const res = await fetch(`${url}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${config.adminToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  })
  const json = (await res.json().catch(() => ({}))) as { data?: unknown; error?: { message?: string } }
  if (!res.ok) throw new BootError(`The gateway at ${url} refused: ${json.error?.message ?? res.statusText}`)
  return json.data
}

/** Runs `work` with direct database access, unless a running gateway owns the data directory. */
export async function withDatabase<T>(config: Config, work: () => Promise<T>): Promise<T> {
  const { db, lock } = await prepareDatabase(config)
  try {
    return await work()
  } finally {
    await db.close()
    await lock?.release()
  }
}

export const commands: Record<string, Command> = {
  start: {
    usage: 'vaultgate start',
    summary: 'Serve the API (GraphQL at /graphql, REST under /v1, explorer at /, reference at /docs); the default command.',
    run: async (_args, config) => {
      const progress = createProgress()
      const gateway = await startGateway(config, { progress }).finally(() => progress.end())
      out(`\nvaultgate is ready: ${gateway.url}/graphql (GraphiQL in a browser), REST under ${gateway.url}/v1`)
      out(`  vault explorer ${gateway.url}/   API reference ${gateway.url}/docs   OpenAPI ${gateway.url}/openapi.json   metrics ${gateway.url}/metrics`)
      const h = await gateway.hints?.catch(() => undefined)
      if (h) {
        out(`Demo data: try vault ids ${h.vaultIds.slice(0, 4).join(', ')}`)
        for (const w of h.wallets) out(`  wallet ${w.address} (vault ${w.vaultId}: ${w.note})`)
        const [v] = h.vaultIds
        if (v) out(`  curl ${gateway.url}/graphql -H 'content-type: application/json' -d '{"query":"{ vault(id: \\"${v}\\") { id name tvl sharePrice } }"}'`)
      }
      out('')
      let stopping = false
      const stop = (signal: string) => {
        if (stopping) process.exit(1)
        stopping = true
        out(`vaultgate: ${signal} received, finishing in-flight requests…`)
        gateway.close().then(
          () => process.exit(0),
          () => process.exit(1),
        )
      }
      process.on('SIGTERM', () => stop('SIGTERM'))
      process.on('SIGINT', () => stop('SIGINT'))
      await new Promise(() => {})
    },
  },
  migrate: {
    usage: 'vaultgate migrate',
    summary: 'Apply pending database migrations (the gateway also does this at start).',
    run: async (_args, config) => {
      const url = await runningGateway(config)
      if (url) throw new BootError(`The gateway at ${url} owns the data directory and applied migrations when it started; nothing to do.`)
      const progress = createProgress()
      progress.update('Applying migrations')
      const { db, lock, applied } = await prepareDatabase(config).finally(() => progress.end())
      await db.close()
      await lock?.release()
      out(applied.length ? `Applied ${applied.length} migration(s): ${applied.join(', ')}` : 'The database is up to date.')
    },
  },
  allowlist: {
    usage: 'vaultgate allowlist add|remove|list [ADDRESS] [NOTE]',
    summary: 'Manage the wallets that may hold API keys; removing one revokes its key.',
    run: allowlistCommand,
  },
  import: {
    usage: 'vaultgate import FILE',
    summary: 'Load a JSON document {"vaults":[…],"compositions":[…],"transactions":[…]} in one transaction.',
    run: async (args, config) => {
      const file = args[0]
      if (!file) throw new UsageError('import needs a FILE argument.')
      const progress = createProgress()
      let counts: unknown
      try {
        progress.update(`Reading ${file}`)
        const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
          throw new BootError(`Cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}.`)
        })
        const url = await runningGateway(config)
        if (url) {
          progress.update(`Importing through the gateway at ${url}`)
          counts = await callAdmin(config, url, 'POST', '/import', text)
        } else {
          progress.update(`Parsing ${file}`)
          let doc: unknown
          try {
            doc = JSON.parse(text)
          } catch {
            throw new BootError(`${file} is not valid JSON.`)
          }
          const { importDocument } = await import('./importer/write.js')
          progress.update('Opening the database')
          counts = await withDatabase(config, () => {
            progress.update('Validating the document')
            return importDocument(doc, undefined, { onProgress: (p) => progress.update(`Writing ${p.kind}`, p.done, p.total) })
          })
        }
      } finally {
        progress.end()
      }
      const c = counts as { vaults: number; compositions: number; transactions: number }
      out(`Imported ${c.vaults} vault(s), ${c.compositions} composition snapshot(s), ${c.transactions} transaction(s).`)
    },
  },
}

interface AllowlistEntryJson {
  address: string
  note: string | null
  createdAtMs: number
}

/** `allowlist add|remove|list`: through the running gateway's admin API when it owns the embedded data directory. */
async function allowlistCommand(args: string[], config: Config): Promise<void> {
  const [action, rawAddress, ...noteWords] = args
  if (action !== 'add' && action !== 'remove' && action !== 'list') throw new UsageError('allowlist needs add, remove or list.')
  if (action === 'list') {
    const url = await runningGateway(config)
    const items = url
      ? ((await callAdmin(config, url, 'GET', '/allowlist')) as { items: AllowlistEntryJson[] }).items
      : await withDatabase(config, async () => (await listAllowlist()).map((e) => ({ address: e.address, note: e.note, createdAtMs: e.createdAt.getTime() })))
    if (items.length === 0) out('The allowlist is empty.')
    for (const e of items) out(`${e.address}  ${new Date(e.createdAtMs).toISOString()}${e.note ? `  ${e.note}` : ''}`)
    return
  }
  if (!rawAddress) throw new UsageError(`allowlist ${action} needs an ADDRESS.`)
  const address = normalizeAddress(rawAddress)
  if (address === undefined) throw new BootError(`${rawAddress} is not an EVM address (0x followed by 40 hex digits).`)
  const note = noteWords.length > 0 ? noteWords.join(' ') : undefined
  const url = await runningGateway(config)
  if (action === 'add') {
    const { added } = url
      ? ((await callAdmin(config, url, 'PUT', `/allowlist/${address}`, note === undefined ? undefined : JSON.stringify({ note }))) as { added: boolean })
      : await withDatabase(config, () => addToAllowlist(address, note))
    out(added ? `Added ${address} to the allowlist.` : `${address} was already on the allowlist${note === undefined ? '' : '; its note is updated'}.`)
    return
  }
  const { removed, revokedKeyId } = url
    ? ((await callAdmin(config, url, 'DELETE', `/allowlist/${address}`)) as { removed: boolean; revokedKeyId: string | null })
    : await withDatabase(config, () => removeFromAllowlist(address, systemClock))
  const key = revokedKeyId ? ` Its API key ${revokedKeyId} is revoked.` : ''
  out(removed ? `Removed ${address} from the allowlist.${key}` : `${address} was not on the allowlist.${key}`)
}

function help(): string {
  const width = Math.max(...Object.values(commands).map((c) => c.usage.length))
  return [
    'vaultgate — GraphQL gateway for investment-vault data and wallet API keys',
    '',
    'Usage:',
    ...Object.values(commands).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    'Configuration comes from environment variables (see README.md, "Configuration").',
  ].join('\n')
}

export async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, strict: false, options: { help: { type: 'boolean', short: 'h' } } })
  if (values.help || positionals[0] === 'help') {
    out(help())
    return
  }
  const name = positionals[0] ?? 'start'
  const command = commands[name]
  try {
    if (!command) throw new UsageError(`Unknown command "${name}".`)
    const config = loadConfig()
    applyRuntimeFlags(config)
    setLogger(createLogger(config.logLevel))
    await command.run(positionals.slice(1), config)
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`vaultgate: ${e.message}\n\n${help()}\n`)
      process.exit(2)
    }
    const known =
      e instanceof ConfigError || e instanceof BootError || e instanceof DataDirBusyError || (e as { extensions?: { code?: string } }).extensions?.code
    process.stderr.write(`vaultgate: ${known ? (e as Error).message : `failed: ${(e as Error).message ?? String(e)}`}\n`)
    if (process.env.DEBUG) process.stderr.write(`${(e as Error).stack}\n`)
    process.exit(1)
  }
}
