import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { packageRoot } from '../../src/core/paths.js'

/**
 * The package as `npm install` leaves it (bin/, package.json and a compiled dist/), in a fresh
 * folder under test-output/ so node_modules resolves from the checkout and the checkout's own
 * dist/ is left alone. For tests of bin/vaultgate.js, the entry `npm start` runs.
 */
export async function builtPackage(): Promise<{ root: string; remove(): Promise<void> }> {
  await mkdir(path.join(packageRoot, 'test-output'), { recursive: true })
  const root = await mkdtemp(path.join(packageRoot, 'test-output', 'built-'))
  await mkdir(path.join(root, 'bin'))
  await copyFile(path.join(packageRoot, 'bin', 'vaultgate.js'), path.join(root, 'bin', 'vaultgate.js'))
  await copyFile(path.join(packageRoot, 'package.json'), path.join(root, 'package.json'))
  for (const shared of ['prisma', 'public', 'schema.graphql']) await symlink(path.join(packageRoot, shared), path.join(root, shared))
  const tsc = path.join(packageRoot, 'node_modules', 'typescript', 'bin', 'tsc')
  await promisify(execFile)(
    process.execPath,
    [tsc, '-p', path.join(packageRoot, 'tsconfig.build.json'), '--outDir', path.join(root, 'dist'), '--sourceMap', 'false', '--declaration', 'false'],
    {
      cwd: packageRoot,
    },
  )
  return { root, remove: () => rm(root, { recursive: true, force: true }) }
}
