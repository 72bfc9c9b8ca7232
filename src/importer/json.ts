import { badRequest, quoted } from '../core/errors.js'
import { MAX_REPORTED, reject, type Issue } from './document.js'

// An import document's JSON text, parsed with its duplicate keys refused (issue 25 row 9).
// JSON.parse keeps the last of two equal keys silently, so `{"vaults":[A],"vaults":[B]}` would
// import B alone, and a record with two "status" keys would mean whichever came last. No parser
// in node_modules reports duplicates, and those on the registry that do (@humanwhocodes/momoa,
// jsonc-parser's visitor) build an AST or call back per token: several times JSON.parse's time and
// memory on a 256 MiB document. So JSON.parse still builds the value (and refuses bad syntax), and
// one pass over the already valid text, which skips string contents with indexOf, compares the
// keys of each object. It runs where the parse runs: in the import worker for large documents
// (src/importer/parse-worker.ts).

/** Parses `text`; `bad_request` (`notJson`) when it is not JSON, or naming each repeated key. */
export function parseImportJson(text: string, notJson: string): unknown {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw badRequest(notJson)
  }
  const { issues, total } = duplicateKeys(text)
  if (total > 0) reject(issues, total)
  return value
}

interface Frame {
  /** The keys seen so far; undefined for an array. */
  keys: Set<string> | undefined
  /** The last key (object) or the element index (array): the path to what is inside. */
  at: string | number
  /** In an object, the next string is a key. */
  expectKey: boolean
}

const QUOTE = 34
const BACKSLASH = 92
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125
const OPEN_ARRAY = 91
const CLOSE_ARRAY = 93
const COMMA = 44

/** The repeated keys of a valid JSON text (the first MAX_REPORTED, and how many in all), with their paths. */
export function duplicateKeys(text: string): { issues: Issue[]; total: number } {
  const issues: Issue[] = []
  let total = 0
  const stack: Frame[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // The closing quote: the next one not escaped by an odd run of backslashes.
      let end = text.indexOf('"', i + 1)
      while (isEscaped(text, end)) end = text.indexOf('"', end + 1)
      const top = stack.at(-1)
      if (top?.keys && top.expectKey) {
        const raw = text.slice(i + 1, end)
        // "\u0061" and "a" are the same key.
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw
        if (top.keys.has(key)) {
          total++
          if (issues.length < MAX_REPORTED) issues.push({ path: stack.slice(0, -1).map((f) => f.at), message: `duplicate key ${quoted(key)}` })
        }
        top.keys.add(key)
        top.at = key
        top.expectKey = false
      }
      i = end
    } else if (c === OPEN_OBJECT) stack.push({ keys: new Set(), at: '', expectKey: true })
    else if (c === OPEN_ARRAY) stack.push({ keys: undefined, at: 0, expectKey: false })
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) stack.pop()
    else if (c === COMMA) {
      const top = stack.at(-1)!
      if (top.keys) top.expectKey = true
      else top.at = (top.at as number) + 1
    }
  }
  return { issues, total }
}

function isEscaped(text: string, quote: number): boolean {
  let backslashes = 0
  for (let j = quote - 1; text.charCodeAt(j) === BACKSLASH; j--) backslashes++
  return backslashes % 2 === 1
}
