import type { CodegenConfig } from '@graphql-codegen/cli'

// The config of docs/graphql-clients.md, run by CI against this package's schema.graphql
// (test/examples/graphql-client.test.ts): the client preset with the custom scalars mapped, and
// the trusted documents a gateway serves by id (GRAPHQL_DOCUMENTS_FILE).
const config: CodegenConfig = {
  schema: '../../schema.graphql',
  documents: ['src/**/*.ts'],
  ignoreNoDocuments: true,
  generates: {
    './src/gql/': {
      preset: 'client',
      config: {
        strictScalars: true,
        scalars: { Decimal: 'string', DateTime: 'string', UnixMs: 'number', Milliseconds: 'number' },
        enumsAsTypes: true,
      },
      presetConfig: { persistedDocuments: { hashAlgorithm: 'sha256' } },
    },
  },
}
export default config
