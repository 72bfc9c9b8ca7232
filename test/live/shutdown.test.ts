import net from 'node:net'
import { describe, expect, it } from 'vitest'
import { testBackend } from '../support/db.js'
import { gatewayStorage, startGatewayProcess } from '../support/process.js'
import { subscribe } from '../support/sse.js'
import { rawSocket } from '../support/ws.js'

// A gateway told to stop ends its subscription streams cleanly (`event: complete`, then the
// connection closes; a WebSocket closes with 1001, going away) once it stops accepting, rather than holding them until SHUTDOWN_TIMEOUT_MS
// cuts them; its clients subscribe again elsewhere.

describe(`subscriptions of a gateway process told to stop (${testBackend})`, () => {
  const storageEnv = gatewayStorage('vaultgate-live-shutdown-')

  it('ends open streams with `complete` on SIGTERM and exits 0, long before SHUTDOWN_TIMEOUT_MS', async () => {
    // A minute to drain: a stream left open would keep the process alive that long.
    const gw = await startGatewayProcess({ ...storageEnv(), SHUTDOWN_DELAY_MS: '300', SHUTDOWN_TIMEOUT_MS: '60000' })
    const exited = new Promise<number | null>((resolve) => gw.child.once('exit', (code) => resolve(code)))
    try {
      const s = await subscribe(fetch, `${gw.url}/graphql`, 'subscription { walletActivity(address: "0xa11ce00000000000000000000000000000000001") { id } }')
      expect(s.status).toBe(200)
      gw.child.kill('SIGTERM')
      await s.ended
      expect(s.buffered).toEqual([{ event: 'complete', data: null }])
      // Well within this test's 60 s: the shutdown did not wait for SHUTDOWN_TIMEOUT_MS.
      expect(await exited).toBe(0)
    } finally {
      if (gw.child.exitCode === null) gw.child.kill('SIGKILL')
    }
  })

  it('closes open WebSockets with 1001 on SIGTERM and exits 0, long before SHUTDOWN_TIMEOUT_MS', async () => {
    const gw = await startGatewayProcess({ ...storageEnv(), SHUTDOWN_DELAY_MS: '300', SHUTDOWN_TIMEOUT_MS: '60000' })
    const exited = new Promise<number | null>((resolve) => gw.child.once('exit', (code) => resolve(code)))
    try {
      const ws = rawSocket(gw.url)
      await ws.opened
      ws.send({ type: 'connection_init' })
      expect(await ws.message()).toEqual({ type: 'connection_ack' })
      ws.send({
        id: '1',
        type: 'subscribe',
        payload: { query: 'subscription { walletActivity(address: "0xa11ce00000000000000000000000000000000001") { id } }' },
      })
      // An idle socket (no subscription) goes the same way.
      const idle = rawSocket(gw.url)
      await idle.opened
      gw.child.kill('SIGTERM')
      expect(await ws.closed).toEqual({ code: 1001, reason: 'Going away' })
      expect((await idle.closed).code).toBe(1001)
      expect(await exited).toBe(0)
    } finally {
      if (gw.child.exitCode === null) gw.child.kill('SIGKILL')
    }
  })

  it('cuts a WebSocket whose peer never answers the close at SHUTDOWN_TIMEOUT_MS, not at ws’ own 30 s', async () => {
    const gw = await startGatewayProcess({ ...storageEnv(), SHUTDOWN_TIMEOUT_MS: '1000' })
    const exited = new Promise<number | null>((resolve) => gw.child.once('exit', (code) => resolve(code)))
    const { port } = new URL(gw.url)
    const peer = net.connect(Number(port), '127.0.0.1')
    try {
      // The upgrade by hand; then the peer reads nothing more and never closes.
      const switched = new Promise<string>((resolve) => peer.once('data', (d) => resolve(String(d))))
      peer.write(
        'GET /graphql HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n',
      )
      expect((await switched).split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols')
      peer.pause()
      const started = Date.now()
      gw.child.kill('SIGTERM')
      expect(await exited).toBe(0)
      // ws would wait 30 s for the close frame it never gets.
      expect(Date.now() - started).toBeLessThan(20_000)
      expect(gw.stdout()).toMatch(/"code":1006,.*"msg":"WebSocket closed"/)
    } finally {
      peer.destroy()
      if (gw.child.exitCode === null) gw.child.kill('SIGKILL')
    }
  })
})
