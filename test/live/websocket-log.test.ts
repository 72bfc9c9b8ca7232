import { describe, expect, it } from 'vitest'
import { testBackend } from '../support/db.js'
import { gatewayStorage, startGatewayProcess } from '../support/process.js'
import { rawSocket } from '../support/ws.js'

// What a client gets wrong on a WebSocket is answered with the protocol's close code and is
// nothing the operator must read: no error line, no stack, in a real gateway process' log.

describe(`bad WebSocket input in a gateway process (${testBackend})`, () => {
  const storageEnv = gatewayStorage('vaultgate-ws-log-')

  it('closes with the protocol codes and logs no error and no stack', async () => {
    const gw = await startGatewayProcess({ ...storageEnv(), REQUEST_BODY_LIMIT_BYTES: '2048', LOG_LEVEL: 'debug' })
    try {
      const init = async () => {
        const r = rawSocket(gw.url)
        await r.opened
        r.send({ type: 'connection_init' })
        expect(await r.message()).toEqual({ type: 'connection_ack' })
        return r
      }
      const cases: [(r: ReturnType<typeof rawSocket>) => void, number][] = [
        [(r) => r.send('{not json'), 4400],
        [(r) => r.send({ type: 'hello' }), 4400],
        [(r) => r.send({ type: 'connection_ack' }), 4400],
        [(r) => r.send({ type: 'connection_init' }), 4429],
        [(r) => r.send({ id: '1', type: 'subscribe', payload: { query: `subscription { vaultUpdated(id: "x") { id } } #${'x'.repeat(3000)}` } }), 1009],
        [(r) => r.socket.send(Buffer.from([0xff, 0xfe]), { binary: true }), 4400],
      ]
      for (const [send, code] of cases) {
        const r = await init()
        send(r)
        expect((await r.closed).code).toBe(code)
      }
      // Key management is not configured here: a token is then no reason to refuse the socket.
      const withToken = rawSocket(gw.url)
      await withToken.opened
      withToken.send({ type: 'connection_init', payload: { authorization: 'Bearer x' } })
      expect(await withToken.message()).toEqual({ type: 'connection_ack' })
      // A client that vanishes mid-subscription.
      const gone = await init()
      gone.send({
        id: '1',
        type: 'subscribe',
        payload: { query: 'subscription { walletActivity(address: "0xa11ce00000000000000000000000000000000001") { id } }' },
      })
      gone.socket.terminate()
      withToken.socket.terminate()
      expect(await gw.stop()).toBe(0)
      const lines = gw
        .stdout()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { stack?: string } })
      expect(lines.filter((l) => l.level >= 40)).toEqual([])
      expect(gw.output()).not.toMatch(/\n\s+at /)
    } finally {
      if (gw.child.exitCode === null) gw.child.kill('SIGKILL')
    }
  })
})
