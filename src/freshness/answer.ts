import type { DataTimes, Freshness } from './status.js'

// The Data-As-Of of one answer (docs/spec/decisions.md §10: "the time of the newest data it used"),
// the one rule for every door of the HTTP front (the hot paths, the early answers' cached entries,
// the Hono routes) and for the `as_of` of wallet bodies:
// - an answer that read vaults (a vault, a page of the list, a wallet's positions, transactions or
//   pending redeems in them) is as of the newest data time of those vaults (vaults.data_as_of: its
//   newest vault snapshot, composition snapshot or transaction time, submitted or completed,
//   capped at the import that wrote it);
// - an answer that read no vault's data (an empty list, a wallet without history, a vault without
//   any data yet) or the gateway-wide times (`meta`, /v1/status) is as of the gateway's data_as_of:
//   the absence of data is known as of the newest data there is.
// The times are the ones this process holds (src/freshness/status.ts: read once per import, no
// statement per request), taken before the answer runs: a failure to read them fails the answer
// (beginRead rejects) rather than answering without its time.

/** The Data-As-Of of an answer that read `vaultIds` (none: the gateway-wide time); null only while there is no data at all. */
export function dataAsOf(times: DataTimes, vaultIds: Iterable<string>): Date | null {
  let newest: Date | undefined
  for (const id of vaultIds) {
    const t = times.vaults.get(id)
    if (t && (!newest || t > newest)) newest = t
  }
  return newest ?? times.dataAsOf
}

/** What one answer read, recorded by its resolvers (src/graphql/context.ts `readData`), with the times it answers with. */
export class DataUse {
  readonly #vaults = new Set<string>()
  #wide = false

  constructor(readonly times: DataTimes) {}

  /** The answer read these vaults' data: their time (for a body's `as_of`). */
  vaults(ids: Iterable<string>): Date | null {
    const list = [...ids]
    for (const id of list) this.#vaults.add(id)
    return dataAsOf(this.times, list)
  }

  /** The answer read the gateway-wide times (`meta`): it is as of data_as_of. */
  wide(): DataTimes {
    this.#wide = true
    return this.times
  }

  /** The answer's Data-As-Of (null: no data at all, no header). */
  get dataAsOf(): Date | null {
    return this.#wide ? this.times.dataAsOf : dataAsOf(this.times, this.#vaults)
  }

  /** Data-As-Of's value on the wire. */
  get header(): string | null {
    return this.dataAsOf?.toISOString() ?? null
  }
}

/**
 * Starts a read answer: the times it will answer with, read before it runs (the data it reads is
 * at least that new). Rejects when they cannot be read: the answer then fails through its door's
 * normal error path (503 for the database being unavailable), never answers without its time.
 * undefined without a freshness service (an answer that is no read: key management, mutations).
 */
export async function beginRead(freshness: Freshness | undefined): Promise<DataUse | undefined> {
  return freshness ? new DataUse(await freshness.current()) : undefined
}
