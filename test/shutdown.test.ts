import { describe, expect, it } from 'vitest'
import { testBackend } from './support/db.js'
import { eventually } from './support/eventually.js'
import { gatewayStorage, startGatewayProcess } from './support/process.js'
import { answered } from './support/bodies.js'

const query = (url: string) =>
  fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ vault(id: \\"x\\") { id } }"}' })

const until = (condition: () => boolean, what: string) => eventually(condition, { what, timeoutMs: 10_000, intervalMs: 25 })

// A rolling restart (Kubernetes, compose): the orchestrator sends SIGTERM and, at the same time,
// starts taking the instance out of its load balancer. Requests still arrive for a few seconds.
describe(`a gateway process told to stop (${testBackend})`, () => {
  const storageEnv = gatewayStorage('vaultgate-shutdown-')

  it('answers /readyz 503 at once on SIGTERM, keeps serving everything else for SHUTDOWN_DELAY_MS, then exits 0', async () => {
    const gw = await startGatewayProcess({ ...storageEnv(), SHUTDOWN_DELAY_MS: '5000' })
    const exited = new Promise<number | null>((resolve) => gw.child.once('exit', (code) => resolve(code)))
    try {
      expect((await fetch(`${gw.url}/readyz`)).status).toBe(200)
      expect((await query(gw.url)).status).toBe(200) // warm: the requests below must fit in the delay

      gw.child.kill('SIGTERM')
      await until(() => gw.output().includes('SIGTERM received'), 'the SIGTERM line')
      const [ready, health, answer] = await Promise.all([fetch(`${gw.url}/readyz`), fetch(`${gw.url}/healthz`), query(gw.url)])
      expect(ready.status).toBe(503)
      expect(await ready.json()).toEqual({
        status: 'error',
        error: { code: 'unavailable', message: 'The gateway is shutting down.' },
        server_time_ms: expect.any(Number),
      })
      expect(health.status).toBe(200)
      expect(await answer.json()).toEqual(answered({ vault: null }))
      // Clients are told to reconnect (elsewhere) rather than keep this connection alive.
      expect(answer.headers.get('connection')).toBe('close')
      expect(gw.child.exitCode).toBeNull() // all of the above was served by a process that had been told to stop

      expect(await exited).toBe(0)
      await expect(fetch(`${gw.url}/healthz`)).rejects.toThrow()
    } finally {
      if (gw.child.exitCode === null) gw.child.kill('SIGKILL')
    }
  })
})
