// No import cycle in src/, type-only imports and `export ... from` included: a local eslint rule. It reads
// the import graph of src/ from disk once (TypeScript's preProcessFile); each import of the text being
// linted that leads back to its file through that graph is reported, with the chain.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

/** The src/ file a relative specifier names (`./x.js` → x.ts, `./dir/index.js`), or undefined. */
function resolveImport(from, specifier) {
  if (!specifier.startsWith('.')) return undefined
  const base = resolve(dirname(from), specifier)
  for (const candidate of [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, join(base, 'index.ts')])
    if (candidate.endsWith('.ts') && existsSync(candidate)) return candidate
  return undefined
}

/** Every .ts file of src/ → the src/ files it imports (static, type-only, re-exports, dynamic with a literal). */
function readGraph(src) {
  const graph = new Map()
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (path.endsWith('.ts')) {
        const { importedFiles } = ts.preProcessFile(readFileSync(path, 'utf8'), true, true)
        graph.set(path, [...new Set(importedFiles.map((f) => resolveImport(path, f.fileName)).filter(Boolean))])
      }
    }
  }
  walk(src)
  return graph
}

/** A chain of imports from `start` back to `target` ([start, ..., target]), or undefined. */
function pathBack(graph, start, target) {
  const seen = new Set()
  const stack = [[start, [start]]]
  while (stack.length > 0) {
    const [node, path] = stack.pop()
    if (node === target) return path
    if (seen.has(node)) continue
    seen.add(node)
    for (const next of graph.get(node) ?? []) stack.push([next, [...path, next]])
  }
  return undefined
}

export function cycleRules(root) {
  const src = join(root, 'src')
  let graph
  const rule = {
    meta: {
      type: 'problem',
      messages: { cycle: 'Import cycle: {{chain}}. Move what both need into a lower layer (docs/architecture.md).' },
    },
    create(context) {
      const file = resolve(context.filename)
      if (!file.startsWith(src + '/')) return {}
      graph ??= readGraph(src)
      const check = (node, specifier) => {
        if (typeof specifier !== 'string') return
        const target = resolveImport(file, specifier)
        if (!target) return
        const back = pathBack(graph, target, file)
        if (back) context.report({ node, messageId: 'cycle', data: { chain: [file, ...back].map((f) => relative(root, f)).join(' → ') } })
      }
      return {
        ImportDeclaration: (node) => check(node, node.source.value),
        ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
        ExportAllDeclaration: (node) => check(node, node.source.value),
        ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
        TSImportType: (node) => check(node, node.argument?.literal?.value ?? node.source?.value),
      }
    },
  }
  return [
    { files: ['src/**/*.ts'], plugins: { cycles: { rules: { 'no-import-cycle': rule } } }, rules: { 'cycles/no-import-cycle': 'error' } },
  ]
}
