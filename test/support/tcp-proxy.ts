import net from 'node:net'

/**
 * A loopback TCP proxy that tests can cut, stall, slow down and restore, to play a database going
 * away, becoming unreachable or slow.
 */
export class TcpProxy {
  private server: net.Server | undefined
  private sockets = new Set<net.Socket>()
  /** Added to every chunk in both directions. */
  private delayMs = 0
  /** While stalled, nothing is forwarded and new connections are held unanswered (a partition). */
  private stalled = false
  private held: (() => void)[] = []
  port = 0
  /** Bytes forwarded, both directions. */
  bytes = 0
  /** Chunks received, both directions, forwarded or held (a client's commands count while stalled). */
  chunks = 0
  /** Set by cutWhen / stallWhen: the fault to play when a client's chunk matches. */
  private trigger: { match: (chunk: Buffer) => boolean; fire: () => void } | undefined

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = this.port): Promise<number> {
    this.server = net.createServer((client) => {
      this.sockets.add(client)
      client.on('close', () => this.sockets.delete(client))
      client.on('error', () => {})
      const connect = () => {
        if (client.destroyed) return
        const upstream = net.connect(this.targetPort, this.targetHost)
        this.sockets.add(upstream)
        upstream.on('close', () => {
          this.sockets.delete(upstream)
          client.destroy()
        })
        upstream.on('error', () => {})
        client.on('close', () => upstream.destroy())
        this.forward(client, upstream, true)
        this.forward(upstream, client, false)
      }
      if (this.stalled) this.held.push(connect)
      else connect()
    })
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve))
    this.port = (this.server.address() as net.AddressInfo).port
    return this.port
  }

  private forward(from: net.Socket, to: net.Socket, fromClient: boolean) {
    from.on('data', (chunk: Buffer) => {
      this.chunks++
      if (fromClient && this.trigger?.match(chunk)) {
        const { fire } = this.trigger
        this.trigger = undefined
        // The fault comes first: the matching chunk is cut off with its connection, or held.
        fire()
        if (!this.stalled) return
      }
      const send = () => {
        if (to.destroyed) return
        this.bytes += chunk.length
        to.write(chunk)
      }
      const go = () => (this.delayMs > 0 ? setTimeout(send, this.delayMs) : send())
      if (this.stalled) this.held.push(go)
      else go()
    })
  }

  /**
   * Refuses new connections and kills the open ones: closed (FIN), or with `reset` aborted (RST, the
   * client reads ECONNRESET), as a crashed server or a middlebox dropping the connection does.
   */
  async cut({ reset = false }: { reset?: boolean } = {}): Promise<void> {
    this.held = []
    const server = this.server
    this.server = undefined
    for (const s of this.sockets)
      if (reset) s.resetAndDestroy()
      else s.destroy()
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  }

  /**
   * Cuts (as `cut`) at the moment a client sends a chunk `match` accepts, before it reaches the
   * server: a fault in the middle of a statement, on a connection the client believed healthy. The
   * chunk is dropped. Resolves once cut.
   */
  cutWhen(match: (chunk: Buffer) => boolean, options: { reset?: boolean } = {}): Promise<void> {
    return new Promise((resolve) => {
      this.trigger = { match, fire: () => void this.cut(options).then(resolve) }
    })
  }

  /** Stalls (as `stall`) at the moment a client sends a chunk `match` accepts; that chunk is held too. Resolves once stalled. */
  stallWhen(match: (chunk: Buffer) => boolean): Promise<void> {
    return new Promise((resolve) => {
      this.trigger = {
        match,
        fire: () => {
          this.stall()
          resolve()
        },
      }
    })
  }

  /** Stops forwarding without closing anything: connections and their traffic wait, as in a network partition. */
  stall(): void {
    this.stalled = true
  }

  /** Every chunk, both ways, waits `ms` before it is forwarded (0 = no delay). */
  delay(ms: number): void {
    this.delayMs = ms
  }

  /** Ends a stall (held traffic and connections go through, in order) and any delay. */
  restore(): void {
    this.stalled = false
    this.delayMs = 0
    const held = this.held
    this.held = []
    for (const go of held) go()
  }
}
