// The module hooks of compiledLibrary.ts: a module of src/ resolves to its compiled twin, which loads
// as it is (no transform of tsx's runs on it). Those in `keep` stay the source: they find the
// repository by their own location (workerProcess.ts spawns workers/worker.ts of it).
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

let from = ''
let to = ''
let keep = new Set()

export function initialize(data) {
  from = data.from
  to = data.to
  keep = new Set(data.keep)
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  const { url } = resolved
  // the module's path under src/ without its extension, on either side
  const rel =
    url.startsWith(from) && url.endsWith('.ts') ? url.slice(from.length, -3) : url.startsWith(to) ? url.slice(to.length, -3) : undefined
  if (rel === undefined) return resolved
  if (keep.has(rel)) return url.startsWith(from) ? resolved : next(from + rel + '.ts', context)
  return url.startsWith(to) ? resolved : { url: to + rel + '.js', format: 'module', shortCircuit: true }
}

export async function load(url, context, next) {
  if (!url.startsWith(to)) return next(url, context)
  return { format: 'module', source: await readFile(fileURLToPath(url)), shortCircuit: true }
}
