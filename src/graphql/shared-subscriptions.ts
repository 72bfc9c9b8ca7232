import { type DocumentNode, type ExecutionResult, Kind, type OperationDefinitionNode } from 'graphql'
import { isAsyncIterable, type Plugin } from 'graphql-yoga'

// Shared live work (docs/spec/decisions.md §16): subscribers of the same operation with the same
// variables and the same visibility share one execution per change. A public `vaultUpdated`
// selection runs its resolvers and SQL once per change, whatever the number of subscribers (SSE
// and WebSocket alike: both subscribe through Yoga's envelop). A subscription whose root field is
// key management (marked KEY_MANAGEMENT: src/graphql/public-operations.ts) depends on its
// viewer and is never shared; every other root field (vaultUpdated, walletActivity) answers the
// same to everyone who asks with the same arguments, so the variables are the visibility.
//
// Each subscriber reads the shared results through its own bounded queue: a slow reader keeps
// the latest MAX_QUEUED results (the oldest are dropped: a vault event is its latest state), never
// an unbounded backlog; the plugins after this one (masking, response rules) still run per
// subscriber, on the shared result. The shared execution ends when its last subscriber leaves.

/** Results kept for a subscriber that has not read them yet. */
export const MAX_QUEUED = 16

type Result = ExecutionResult

class Subscriber implements AsyncIterableIterator<Result> {
  readonly #queue: Result[] = []
  #wake?: (r: IteratorResult<Result>) => void
  #done = false
  constructor(private readonly leave: (s: Subscriber) => void) {}

  push(result: Result): void {
    if (this.#done) return
    if (this.#wake) {
      const wake = this.#wake
      this.#wake = undefined
      wake({ value: result, done: false })
      return
    }
    this.#queue.push(result)
    if (this.#queue.length > MAX_QUEUED) this.#queue.shift()
  }

  end(): void {
    if (this.#done) return
    this.#done = true
    const wake = this.#wake
    this.#wake = undefined
    wake?.({ value: undefined, done: true })
  }

  next(): Promise<IteratorResult<Result>> {
    const queued = this.#queue.shift()
    if (queued) return Promise.resolve({ value: queued, done: false })
    if (this.#done) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve) => {
      this.#wake = resolve
    })
  }

  return(): Promise<IteratorResult<Result>> {
    this.#queue.length = 0
    this.end()
    this.leave(this)
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator]() {
    return this
  }
}

/** One execution and the subscribers it feeds. */
class Group {
  readonly subscribers = new Set<Subscriber>()
  readonly #source: AsyncIterator<Result>
  #ended = false

  get ended(): boolean {
    return this.#ended
  }

  constructor(
    source: AsyncIterable<Result>,
    private readonly onEnd: () => void,
  ) {
    this.#source = source[Symbol.asyncIterator]()
    void this.#pump()
  }

  join(): Subscriber {
    const s = new Subscriber((left) => {
      this.subscribers.delete(left)
      if (this.subscribers.size === 0) this.#end()
    })
    this.subscribers.add(s)
    return s
  }

  async #pump(): Promise<void> {
    try {
      for (;;) {
        const { done, value } = await this.#source.next()
        if (done || this.#ended) break
        for (const s of this.subscribers) s.push(value)
      }
    } catch {
      // The source failed (its errors are results, as graphql-js maps them): the subscribers end.
    } finally {
      for (const s of this.subscribers) s.end()
      this.#end()
    }
  }

  #end(): void {
    if (this.#ended) return
    this.#ended = true
    this.onEnd()
    void Promise.resolve(this.#source.return?.()).catch(() => {})
  }
}

/** The operation `operationName` names, or the document's only one. */
function operationOf(document: DocumentNode, operationName: string | null | undefined): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)
  return operationName ? operations.find((o) => o.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined
}

/** Variables as a key: object keys sorted, so `{a,b}` and `{b,a}` share. */
function keyOf(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(keyOf).join(',')}]`
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${keyOf((value as Record<string, unknown>)[k])}`)
      .join(',')}}`
  return JSON.stringify(value) ?? 'null'
}

export function useSharedSubscriptions(): Plugin & { readonly groups: number } {
  const groups = new WeakMap<DocumentNode, Map<string, Promise<Group | Result>>>()
  let open = 0
  return {
    get groups() {
      return open
    },
    onSubscribe({ args, subscribeFn, setSubscribeFn }) {
      const operation = operationOf(args.document, args.operationName)
      const root = args.schema.getSubscriptionType()?.getFields()
      if (!operation || !root) return
      for (const selection of operation.selectionSet.selections) {
        // A fragment at the root, or a key-management field: this subscriber's own execution.
        if (selection.kind !== Kind.FIELD) return
        if ((root[selection.name.value]?.extensions as { keyManagement?: boolean } | undefined)?.keyManagement) return
      }
      const subscribe = async (a: Parameters<typeof subscribeFn>[0]): Promise<Subscriber | Result> => {
        let byVariables = groups.get(a.document)
        if (!byVariables) groups.set(a.document, (byVariables = new Map()))
        const key = `${a.operationName ?? ''}\u0000${keyOf(a.variableValues ?? {})}`
        let pending = byVariables.get(key)
        if (!pending) {
          const table = byVariables
          pending = Promise.resolve(subscribeFn(a)).then((source) => {
            // An error answer (an unknown vault, a bad argument): this subscriber's, not shared.
            if (!isAsyncIterable(source)) {
              table.delete(key)
              return source as Result
            }
            open++
            return new Group(source as AsyncIterable<Result>, () => {
              open--
              if (table.get(key) === pending) table.delete(key)
            })
          })
          pending.catch(() => table.delete(key))
          byVariables.set(key, pending)
        }
        const shared = await pending
        if (!(shared instanceof Group)) return shared
        // Its last subscriber left while this one waited for it: a new execution.
        return shared.ended ? subscribe(a) : shared.join()
      }
      setSubscribeFn(subscribe)
    },
  }
}
