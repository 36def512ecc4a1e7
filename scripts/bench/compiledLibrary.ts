// Preloaded by `npm run bench` (`--import`): the bench's imports of src/ load that source compiled by tsc,
// as users run the package, instead of tsx's on-the-fly transform, which adds a `__name(fn, "…")` call
// to every closure it creates (about 20 µs a durable call: docs/decisions/bench-method.md). `--source` keeps tsx's.
// The compiled copy is this tree's src/ (compileSide.ts) in a temporary directory, removed on exit.
import { mkdtempSync, rmSync } from 'node:fs'
import { register } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { compileSide } from './compileSide.js'

if (!process.argv.includes('--source')) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
  const out = mkdtempSync(join(tmpdir(), 'bench-lib-'))
  process.on('exit', () => rmSync(out, { recursive: true, force: true }))
  process.stderr.write('[bench] compiling src/ with tsc (the library as users run it) …\n')
  compileSide(root, out, join(root, 'node_modules', 'typescript', 'bin', 'tsc'))
  const from = pathToFileURL(join(root, 'src')).href + '/'
  const to = pathToFileURL(join(out, 'src')).href + '/'
  const keep = ['testing/workerProcess']
  register('./compiledResolve.mjs', import.meta.url, { data: { from, to, keep } })
}
