import { createServer } from 'node:net'

// Without vitest (test/support/process.ts imports it): the bench uses this too (bench/processes.ts,
// and bench/replicas.ts through test/support/replica.ts).

/** A loopback port nothing listens on right now (for a process told which port to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}
