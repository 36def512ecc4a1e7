// The module hooks of compiledLibrary.ts: a module of src/ resolves to its compiled twin, which loads
// as it is (no transform of tsx's runs on it).
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

let from = ''
let to = ''

export function initialize(data) {
  ;({ from, to } = data)
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  if (!resolved.url.startsWith(from) || !resolved.url.endsWith('.ts')) return resolved
  return { url: to + resolved.url.slice(from.length, -'.ts'.length) + '.js', format: 'module', shortCircuit: true }
}

export async function load(url, context, next) {
  if (!url.startsWith(to)) return next(url, context)
  return { format: 'module', source: await readFile(fileURLToPath(url)), shortCircuit: true }
}
