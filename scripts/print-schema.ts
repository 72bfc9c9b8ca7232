// Prints the GraphQL schema built in code to schema.graphql; with --check, fails when the
// checked-in file differs (CI runs the check so the SDL in the repo never drifts from the code).
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { printSchema } from 'graphql'
import { packageRoot } from '../src/core/paths.js'
import { schema } from '../src/graphql/schema/index.js'

const file = path.join(packageRoot, 'schema.graphql')
const printed = `${printSchema(schema)}\n`
if (process.argv.includes('--check')) {
  const current = await readFile(file, 'utf8').catch(() => '')
  if (current !== printed) {
    process.stderr.write('schema.graphql is out of date with the code; run `npm run schema:print` and commit it.\n')
    process.exit(1)
  }
  process.stdout.write('schema.graphql matches the code.\n')
} else {
  await writeFile(file, printed)
  process.stdout.write(`Wrote ${path.relative(process.cwd(), file)}\n`)
}
