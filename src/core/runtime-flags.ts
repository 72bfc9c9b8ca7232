import v8 from 'node:v8'
import type { Config } from '../config.js'

// V8 settings that keep the gateway's resident memory small (docs/performance.md "Memory"),
// applied by the CLI once the configuration is known and before the database opens. Both act
// after start-up, so no re-exec is needed: the heap growing factor is read at every GC, and the
// WebAssembly tiers when a module is compiled (Prisma's query compiler and PGlite compile theirs
// on first use, after this runs).

export type RuntimeFlagConfig = Pick<Config, 'storage' | 'heapGrowingPercent' | 'wasmOptimize'>

/** `--name`, `--name=…`, `--no-name` (and the `_` spellings) given to node on its command line. */
function givenOnCommandLine(execArgv: readonly string[], name: string): boolean {
  return execArgv.some((arg) => {
    const flag = arg.replaceAll('_', '-').split('=')[0]
    return flag === `--${name}` || flag === `--no-${name}`
  })
}

/** The V8 flags to set for this configuration; a flag given to node on its command line wins. */
export function runtimeFlags(config: RuntimeFlagConfig, execArgv: readonly string[] = process.execArgv): string[] {
  const flags: string[] = []
  // V8 lets the old generation grow to up to 4× what survived the last full GC before collecting
  // again; under concurrent load (every in-flight request's objects get promoted) that is 200+ MB
  // of garbage. A fixed factor bounds the heap; 0 leaves V8's own heuristic.
  if (config.heapGrowingPercent > 0 && !givenOnCommandLine(execArgv, 'heap-growing-percent')) {
    flags.push(`--heap-growing-percent=${config.heapGrowingPercent}`)
  }
  // Optimising WebAssembly (TurboFan) takes tens of MB of compiler memory that the allocator
  // keeps afterwards. Prisma's query compiler runs only when a query shape misses its plan cache,
  // so its baseline (Liftoff) code costs nothing measurable per request.
  if (!config.wasmOptimize && !givenOnCommandLine(execArgv, 'liftoff-only') && !givenOnCommandLine(execArgv, 'liftoff')) {
    flags.push('--liftoff-only')
  }
  return flags
}

/** Sets runtimeFlags(config) on this process's V8; returns them. */
export function applyRuntimeFlags(config: RuntimeFlagConfig): string[] {
  const flags = runtimeFlags(config)
  for (const flag of flags) v8.setFlagsFromString(flag)
  return flags
}
