import { type DocumentNode, type FieldNode, type GraphQLSchema, Kind, type SelectionSetNode, type ValueNode } from 'graphql'
import { createGraphQLError } from 'graphql-yoga'
import { PAGE_SIZE } from '../core/page.js'

// The cost of a GraphQL operation, estimated before anything runs, from the document AND the
// request's variables: `vaults(first: $n)` costs what `$n` asks for, not what a literal would
// (graphql-armor's cost limit multiplies by literal `first`/`last` only, so `$n = 200` with 15
// aliased 1-year series passed for the price of one vault). Written here rather than with
// graphql-query-complexity: that library type-checks schema objects with `instanceof`, which
// breaks when a process holds graphql's CommonJS and ESM builds (see src/core/errors.ts).
//
// The model, docs/hardening.md:
//   scalar or enum field      1
//   object field              1 + its children
//   list field                multiplier × (1 + its children); the multiplier is the field's own
//                             (`extensions.cost`, from its arguments: a page's size, a series'
//                             bucket count), else 1
//   __typename, introspection 0 (introspection has its own depth rule)
// A multiplier reads an argument from a literal, a variable, or the argument's default; an
// argument it needs and cannot read (a variable not sent) counts at the largest value it allows.

/** A field's multiplier from its argument values (variables resolved); see `cost` below. */
export type CostMultiplier = (args: Record<string, unknown>) => number

/** Field extension naming a list field's multiplier: `extensions: cost((args) => …)`. */
export const cost = (multiplier: CostMultiplier) => ({ cost: multiplier })

/** A connection's page size: `first` or `last`, else the default; the maximum when a variable is missing. */
export const pageCost: CostMultiplier = (args) => {
  const size = args.first ?? args.last
  if (size === undefined) return PAGE_SIZE.max
  return typeof size === 'number' && Number.isFinite(size) ? Math.max(1, Math.min(size, PAGE_SIZE.max)) : PAGE_SIZE.default
}

/**
 * Federation's `_entities(representations:)` (GRAPHQL_FEDERATION, src/graphql/schema/index.ts) is
 * @apollo/subgraph's field, without our extensions: it loads one entity per representation, so a
 * router's batch costs its length times the selection (GRAPHQL_MAX_COST bounds a batch as it bounds a page).
 */
const representationsCost: CostMultiplier = (args) => (Array.isArray(args.representations) ? args.representations.length : PAGE_SIZE.max)

interface FieldDef {
  type: unknown
  args?: readonly { name: string; defaultValue?: unknown }[]
  extensions?: { cost?: CostMultiplier }
}
type Fields = Record<string, FieldDef>

/** The named type of a field's type, and whether a list wraps it (no instanceof: see above). */
function unwrap(type: unknown): { name: string; list: boolean } {
  let t = type as { ofType?: unknown; name?: string; toString(): string }
  let list = false
  while (t.ofType) {
    if (t.toString().startsWith('[')) list = true
    t = t.ofType as typeof t
  }
  return { name: t.name ?? '', list }
}

const MISSING = Symbol('missing')

function literalValue(node: ValueNode, variables: Record<string, unknown>): unknown {
  switch (node.kind) {
    case Kind.VARIABLE:
      return node.name.value in variables ? variables[node.name.value] : MISSING
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value)
    case Kind.STRING:
    case Kind.ENUM:
      return node.value
    case Kind.BOOLEAN:
      return node.value
    case Kind.NULL:
      return null
    default:
      return undefined
  }
}

/** Argument values of a field node: literals, variables (MISSING → undefined), else the declared default. */
function argumentsOf(node: FieldNode, def: FieldDef, variables: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const a of def.args ?? []) if (a.defaultValue !== undefined) out[a.name] = a.defaultValue
  for (const a of node.arguments ?? []) {
    const v = literalValue(a.value, variables)
    if (v === MISSING) delete out[a.name.value]
    else out[a.name.value] = v
  }
  return out
}

/**
 * The cost of the operation a request runs (`operationName`, or the document's only operation; the
 * largest when it names none and holds several, which execution then refuses anyway).
 */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown> = {}, operationName?: string | null): number {
  const fieldsOf = (typeName: string): Fields | undefined => (schema.getType(typeName) as { getFields?: () => Fields } | undefined)?.getFields?.()
  const fragments = new Map<string, { typeName: string; selectionSet: SelectionSetNode }>()
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, { typeName: d.typeCondition.name.value, selectionSet: d.selectionSet })
  }

  const selectionCost = (typeName: string, set: SelectionSetNode, spread: Set<string>): number => {
    let total = 0
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) total += fieldCost(typeName, s, spread)
      else if (s.kind === Kind.INLINE_FRAGMENT) total += selectionCost(s.typeCondition?.name.value ?? typeName, s.selectionSet, spread)
      else {
        const f = fragments.get(s.name.value)
        if (!f || spread.has(s.name.value)) continue
        total += selectionCost(f.typeName, f.selectionSet, new Set(spread).add(s.name.value))
      }
    }
    return total
  }

  const fieldCost = (parent: string, node: FieldNode, spread: Set<string>): number => {
    const name = node.name.value
    if (name.startsWith('__')) return 0
    const def = fieldsOf(parent)?.[name]
    if (!def) return 1 // an unknown field: validation reports it
    const { name: typeName } = unwrap(def.type)
    const own = 1 + (node.selectionSet ? selectionCost(typeName, node.selectionSet, spread) : 0)
    const multiplier = def.extensions?.cost ?? (name === '_entities' && parent === schema.getQueryType()?.name ? representationsCost : undefined)
    // A list without a multiplier of its own (a handful of allocations, a wallet's positions) counts once.
    return multiplier ? Math.max(1, multiplier(argumentsOf(node, def, variables))) * own : own
  }

  let largest = 0
  for (const op of document.definitions) {
    if (op.kind !== Kind.OPERATION_DEFINITION || (operationName && op.name?.value !== operationName)) continue
    const root = op.operation === 'query' ? schema.getQueryType() : op.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType()
    if (root) largest = Math.max(largest, selectionCost(root.name, op.selectionSet, new Set()))
  }
  return largest
}

/** The request error of an operation over the limit (the wording graphql-armor's limit used). */
export const overCost = (max: number, found: number) =>
  createGraphQLError(`Query Cost limit of ${max} exceeded, found ${found}.`, { extensions: { code: 'bad_request', http: { status: 400, spec: true } } })
