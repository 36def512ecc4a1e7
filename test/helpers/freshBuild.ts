// Whether dist/ is the build of src/ as it is now, so a test that packs the package may skip the
// build `npm pack` runs (prepack): `npm test` has just built it. On a fresh clone, after an edit of
// src/ or its tsconfig, or with a file of src/ missing from dist/ (or one of dist/ gone from src/)
// it is not, and the pack builds as it does for a user.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
}

export function distIsFresh(root: string): boolean {
  const src = join(root, 'src')
  const dist = join(root, 'dist')
  if (!existsSync(dist)) return false
  const sources = filesUnder(src)
  const built = filesUnder(dist)
  // the newest input of the build: any file of src/ (.ts and .lua) and the tsconfigs
  const inputs = [...sources, join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json')]
  const newestInput = Math.max(...inputs.map((f) => statSync(f).mtimeMs))
  if (built.some((f) => statSync(f).mtimeMs < newestInput)) return false
  const modules = (files: string[], from: string, ext: RegExp) =>
    new Set(files.filter((f) => ext.test(f) && !f.endsWith('.d.ts')).map((f) => relative(from, f).replace(ext, '')))
  const fromSrc = modules(sources, src, /\.ts$/)
  const fromDist = modules(built, dist, /\.js$/)
  return fromSrc.size === fromDist.size && [...fromSrc].every((m) => fromDist.has(m))
}
