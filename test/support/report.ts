/**
 * Counts for the reliability suite: what was sent and how it was answered, printed once per
 * scenario so a CI log shows the evidence next to the assertions.
 */
export class Tally {
  readonly byStatus = new Map<string, number>()
  sent = 0

  constructor(readonly scenario: string) {}

  add(status: number | string, code?: string) {
    this.sent++
    const key = code ? `${status} ${code}` : String(status)
    this.byStatus.set(key, (this.byStatus.get(key) ?? 0) + 1)
  }

  /** `{ "200": 10, "503 unavailable": 5 }` */
  counts(): Record<string, number> {
    return Object.fromEntries([...this.byStatus].sort(([a], [b]) => a.localeCompare(b)))
  }

  print(extra: Record<string, unknown> = {}) {
    const parts = [`sent ${this.sent}`, ...[...this.byStatus].sort().map(([k, n]) => `${k} ×${n}`), ...Object.entries(extra).map(([k, v]) => `${k} ${v}`)]
    console.info(`[reliability] ${this.scenario}: ${parts.join(', ')}`)
  }
}

/** The status and error code of an answer (REST body or GraphQL errors), or `ok`. */
export async function classify(res: Response): Promise<{ status: number; code?: string; body: any }> {
  const text = await res.text()
  let body: any
  try {
    body = JSON.parse(text)
  } catch {
    return { status: res.status, code: text === '' ? undefined : 'not-json', body: text }
  }
  const code = body?.error?.code ?? body?.errors?.[0]?.extensions?.code
  return { status: res.status, code, body }
}
