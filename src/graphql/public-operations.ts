import { Kind, parse, type DocumentNode, type FragmentDefinitionNode, type GraphQLSchema, type SelectionSetNode } from 'graphql'

// What a GraphQL operation reads, for the HTTP layer: whether it may be answered from the shared
// response cache (src/http/response-cache.ts: queries that only read public data, the same for
// every caller), and whether it touches key management (its answer is then `no-store`, under the
// key-management CORS rules: src/http/headers.ts).

/**
 * The mark of an object type whose every field is the same for every caller (no viewer, no wallet,
 * no key), and of a root query field that returns such a type for any caller: set in the type's or
 * the field's Pothos `extensions` (src/graphql/schema/*.ts). A type or field without it is private,
 * so a new one is left out of the shared cache until someone decides otherwise.
 */
export const PUBLIC = { visibility: 'public' } as const

/** The mark of a root field of key management (query, mutation or subscription), in its Pothos `extensions`. */
export const KEY_MANAGEMENT = { keyManagement: true } as const

/** What the schema marks (PUBLIC, KEY_MANAGEMENT), by name. */
export interface SchemaClasses {
  /** Object types marked PUBLIC. */
  publicTypes: ReadonlySet<string>
  /** Fields of the query type marked PUBLIC. */
  publicQueryFields: ReadonlySet<string>
  /** Root fields (of any operation type) marked KEY_MANAGEMENT. */
  keyManagementFields: ReadonlySet<string>
}

interface Marked {
  name: string
  extensions?: Readonly<Record<string, unknown>> | null
  getFields?: () => Record<string, { name: string; extensions?: Readonly<Record<string, unknown>> | null }>
}

const classesBySchema = new WeakMap<GraphQLSchema, SchemaClasses>()

/** The marks of a schema, read once per schema. */
export function schemaClasses(schema: GraphQLSchema): SchemaClasses {
  let classes = classesBySchema.get(schema)
  if (classes === undefined) {
    const types = Object.values(schema.getTypeMap()) as Marked[]
    const fieldsOf = (type: Marked | null | undefined) => Object.values(type?.getFields?.() ?? {})
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()] as (Marked | null | undefined)[]
    classes = {
      publicTypes: new Set(types.filter((t) => t.getFields && t.extensions?.visibility === PUBLIC.visibility).map((t) => t.name)),
      publicQueryFields: new Set(
        fieldsOf(roots[0])
          .filter((f) => f.extensions?.visibility === PUBLIC.visibility)
          .map((f) => f.name),
      ),
      keyManagementFields: new Set(
        roots
          .flatMap(fieldsOf)
          .filter((f) => f.extensions?.keyManagement === true)
          .map((f) => f.name),
      ),
    }
    classesBySchema.set(schema, classes)
  }
  return classes
}

const MAX_DOCUMENTS = 1000

export interface OperationClass {
  /** Every selected field belongs to a public type: the answer may be shared. */
  public: boolean
  /** A root field of key management is selected. */
  keyManagement: boolean
  /** A query (not a mutation or subscription): its answer carries Data-As-Of unless it is key management (src/http/headers.ts). */
  read: boolean
  /** A subscription: its answer is an event stream, whatever the Accept header (docs/push.md). */
  subscription?: boolean
}

/** The class of an operation, memoised per document text (one parse and walk per distinct query). */
export function operationClassifier(schema: GraphQLSchema): (query: string, operationName: string | undefined) => OperationClass {
  const memo = new Map<string, OperationClass>()
  return (query, operationName) => {
    const key = `${operationName ?? ''}\u0000${query}`
    let answer = memo.get(key)
    if (answer === undefined) {
      answer = classify(schema, query, operationName)
      if (memo.size >= MAX_DOCUMENTS) memo.clear()
      memo.set(key, answer)
    }
    return answer
  }
}

const UNKNOWN: OperationClass = { public: false, keyManagement: false, read: false }

function classify(schema: GraphQLSchema, query: string, operationName: string | undefined): OperationClass {
  let document: DocumentNode
  try {
    document = parse(query)
  } catch {
    return UNKNOWN
  }
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION)
  const operation = operationName ? operations.find((o) => o.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined
  if (!operation) return UNKNOWN
  const fragments = new Map(document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]))
  const queryType = schema.getQueryType()
  const classes = schemaClasses(schema)
  return {
    public:
      operation.operation === 'query' && !!queryType && selectsPublicFieldsOnly(schema, classes, queryType.name, operation.selectionSet, fragments, new Set()),
    // By name on whichever root type: an invalid document (a query field in a mutation) is still treated as key management.
    keyManagement: rootFields(operation.selectionSet, fragments, new Set()).some((f) => classes.keyManagementFields.has(f)),
    read: operation.operation === 'query',
    subscription: operation.operation === 'subscription',
  }
}

/** The root field names an operation selects, through fragments. */
function rootFields(set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, seen: Set<string>): string[] {
  return set.selections.flatMap((s) => {
    if (s.kind === Kind.FIELD) return [s.name.value]
    if (s.kind === Kind.INLINE_FRAGMENT) return rootFields(s.selectionSet, fragments, seen)
    const f = fragments.get(s.name.value)
    if (!f || seen.has(f.name.value)) return []
    seen.add(f.name.value)
    return rootFields(f.selectionSet, fragments, seen)
  })
}

/** Whether a GraphQL operation may be answered from the shared cache (see operationClassifier). */
export function publicOperationCheck(schema: GraphQLSchema): (query: string, operationName: string | undefined) => boolean {
  const classOf = operationClassifier(schema)
  return (query, operationName) => classOf(query, operationName).public
}

export function isPublicOperation(schema: GraphQLSchema, query: string, operationName: string | undefined): boolean {
  return classify(schema, query, operationName).public
}

// A hand-written walk over the schema's own objects (getType, getFields, ofType) rather than
// graphql-js' TypeInfo: a test runner may load a second copy of graphql, whose instanceof checks
// would reject this schema. An invalid document is simply not cacheable; Yoga reports its errors.
function selectsPublicFieldsOnly(
  schema: GraphQLSchema,
  classes: SchemaClasses,
  typeName: string,
  selectionSet: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  spread: Set<string>,
): boolean {
  const isRoot = typeName === schema.getQueryType()?.name
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      const name = selection.name.value
      if (name === '__typename') continue
      if (isRoot ? !classes.publicQueryFields.has(name) : !classes.publicTypes.has(typeName)) return false
      const fields = (schema.getType(typeName) as { getFields?: () => Record<string, { type: unknown }> } | undefined)?.getFields?.()
      const field = fields?.[name]
      if (!field) return false
      let type = field.type as { ofType?: unknown; name?: string }
      while (type.ofType) type = type.ofType as typeof type
      if (
        selection.selectionSet &&
        !(type.name && classes.publicTypes.has(type.name) && selectsPublicFieldsOnly(schema, classes, type.name, selection.selectionSet, fragments, spread))
      )
        return false
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const on = selection.typeCondition?.name.value ?? typeName
      if (on !== typeName || !selectsPublicFieldsOnly(schema, classes, on, selection.selectionSet, fragments, spread)) return false
    } else {
      const fragment = fragments.get(selection.name.value)
      if (!fragment || fragment.typeCondition.name.value !== typeName) return false
      if (spread.has(fragment.name.value)) continue
      spread.add(fragment.name.value)
      if (!selectsPublicFieldsOnly(schema, classes, typeName, fragment.selectionSet, fragments, spread)) return false
    }
  }
  return true
}
