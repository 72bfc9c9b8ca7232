import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { runtimeFlags } from '../../src/core/runtime-flags.js'

describe('V8 runtime flags (docs/performance.md "Memory")', () => {
  const postgres = { DATABASE_URL: 'postgresql://u@db:5432/vg' }

  it('on PostgreSQL: a fixed heap growing factor and baseline WebAssembly', () => {
    expect(runtimeFlags(loadConfig(postgres), [])).toEqual(['--heap-growing-percent=100', '--liftoff-only'])
  })

  it("embedded: V8's defaults (PGlite runs PostgreSQL in WebAssembly on every query)", () => {
    const c = loadConfig({})
    expect(c.wasmOptimize).toBe(true)
    expect(c.heapGrowingPercent).toBe(0)
    expect(c.embeddedSharedBuffersMb).toBe(16)
    expect(runtimeFlags(c, [])).toEqual([])
  })

  it('follows the environment', () => {
    expect(runtimeFlags(loadConfig({ ...postgres, HEAP_GROWING_PERCENT: '0', WASM_OPTIMIZE: 'true' }), [])).toEqual([])
    expect(runtimeFlags(loadConfig({ HEAP_GROWING_PERCENT: '50', WASM_OPTIMIZE: 'false' }), [])).toEqual(['--heap-growing-percent=50', '--liftoff-only'])
    expect(() => loadConfig({ HEAP_GROWING_PERCENT: '-1' })).toThrow('HEAP_GROWING_PERCENT')
  })

  it('leaves a flag given to node on its command line alone', () => {
    const c = loadConfig(postgres)
    expect(runtimeFlags(c, ['--heap-growing-percent=300'])).toEqual(['--liftoff-only'])
    expect(runtimeFlags(c, ['--heap_growing_percent=0', '--no-liftoff-only'])).toEqual([])
    expect(runtimeFlags(c, ['--no-liftoff'])).toEqual(['--heap-growing-percent=100'])
    expect(runtimeFlags(c, ['--max-old-space-size=512'])).toEqual(['--heap-growing-percent=100', '--liftoff-only'])
  })
})
