// The layering of src/ (docs/development.md "Layout"), checked on every `npm test`. Layers import only from
// layers to their left:
//   core ← db ← features ← graphql ← http ← rest ← openapi ← http/routes ← app ← server ← cli
// src/config.ts (the settings and their validation) may be imported from any layer and imports
// only core and the address rule. Type-only imports count: a cycle of types ties modules together
// for a reader as much as values do.
// The feature folders: each owns one part of the domain (its store, its rules) and may use another's,
// but never both ways (the rule `features-one-way` below).
const features = 'vaults|wallets|keys|auth|importer|demo|sources|webhooks|live|freshness'

const layers = [
  ['core', '^src/core/'],
  ['db', '^src/db/'],
  ['features', `^src/(${features})/`],
  ['graphql', '^src/graphql/'],
  ['http', '^src/http/(?!routes/)'],
  ['rest', '^src/rest/'],
  ['openapi', '^src/openapi/'],
  ['http-routes', '^src/http/routes/'],
  ['app', '^src/(app|services)\\.ts$'],
  ['server', '^src/server\\.ts$'],
  ['cli', '^src/(cli|main)\\.ts$'],
]

const layerRules = layers.slice(0, -1).map(([name, path], i) => ({
  name: `layer-${name}`,
  comment: `${name} must not import from the layers above it (${layers
    .slice(i + 1)
    .map(([n]) => n)
    .join(', ')})`,
  severity: 'error',
  from: { path },
  to: { path: layers.slice(i + 1).map(([, p]) => p) },
}))

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycles, type-only imports included.',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'features-one-way',
      severity: 'error',
      comment:
        'Feature folders depend on each other one way: no feature imports a feature that imports it back, directly or through others (type-only imports included). What both need belongs to the one that owns it.',
      // Folder scope: a pair of folders is a cycle even when no single module is (a imports b/x, b/y imports a).
      scope: 'folder',
      from: { path: `^src/(${features})$` },
      to: { path: `^src/(${features})$`, circular: true },
    },
    {
      name: 'config-is-a-leaf',
      severity: 'error',
      comment: 'src/config.ts imports only core and the address rule, so every layer may import it.',
      from: { path: '^src/config\\.ts$' },
      to: { path: '^src/', pathNot: ['^src/core/', '^src/wallets/address\\.ts$'] },
    },
    {
      name: 'sql-in-stores',
      severity: 'error',
      comment:
        "Only db/, the features' stores and the importer use the database module at run time (app.ts and server.ts open and observe it); everything else is handed a client (GraphQL: Context.db, which plugin-prisma's resolvers read through too) and imports only its types.",
      from: {
        path: '^src/',
        pathNot: ['^src/db/', '^src/[a-z]+/store\\.ts$', '^src/importer/', '^src/(app|services|server)\\.ts$'],
      },
      to: { path: '^src/db/client\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'prisma-runtime-in-stores',
      severity: 'error',
      comment: "Prisma's query helpers (Prisma.sql, Prisma.join) build SQL: stores only. Enums and types may be imported anywhere.",
      from: { path: '^src/', pathNot: ['^src/db/', '^src/[a-z]+/store\\.ts$', '^src/importer/', '^src/graphql/'] },
      to: { path: '^src/generated/prisma/client\\.ts$', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/generated/' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    // TypeScript 7 has no compiler API yet (dependency-cruiser reads TS through it up to 6): swc parses instead.
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
}
