// The `as` casts of src/, counted with the TypeScript AST: every AsExpression and TypeAssertion
// (`<T>x`) whose type is not `const` (`as const` narrows, it does not claim). `satisfies` is no cast.
// Run as a script (`node scripts/lint/casts.js`) it prints the count per folder and fails above
// CAST_BUDGET, so a new cast has to say why a type cannot (issue 30: 147 casts before it).
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/** At most this many casts in src/; lower it when casts go, never raise it to let one in. */
export const CAST_BUDGET = 38

/** Every cast of one source text: its line (1-based) and its text. */
export function castsIn(fileName, text) {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true)
  const found = []
  const visit = (node) => {
    if ((ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && node.type.getText(source) !== 'const')
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, text: node.getText(source) })
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** Every cast of the .ts files under `src`, as `{ file, line, text }` with `file` relative to `root`. */
export function countCasts(root) {
  const casts = []
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (path.endsWith('.ts') && !path.endsWith('.d.ts'))
        for (const cast of castsIn(path, readFileSync(path, 'utf8'))) casts.push({ file: relative(root, path), ...cast })
    }
  }
  walk(join(root, 'src'))
  return casts
}

/** The casts by unit of src/: its folder (`http/`) or top-level file (`logger.ts`). */
export function castsByUnit(casts) {
  const units = new Map()
  for (const { file } of casts) {
    const [, first, ...rest] = file.split(sep)
    const unit = rest.length > 0 ? `${first}/` : first
    units.set(unit, (units.get(unit) ?? 0) + 1)
  }
  return new Map([...units].sort(([a], [b]) => a.localeCompare(b)))
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(fileURLToPath(import.meta.url), '../../..')
  const casts = countCasts(root)
  if (process.argv.includes('--list'))
    for (const c of casts) console.log(`${c.file}:${c.line}  ${c.text.replace(/\s+/g, ' ').slice(0, 120)}`)
  for (const [unit, n] of castsByUnit(casts)) console.log(`${String(n).padStart(4)}  src/${unit}`)
  console.log(`${String(casts.length).padStart(4)}  src/ (budget ${CAST_BUDGET})`)
  if (casts.length > CAST_BUDGET) {
    console.error(
      `src/ has ${casts.length} \`as\` casts, over the budget of ${CAST_BUDGET} (scripts/lint/casts.js): type the value instead.`,
    )
    process.exitCode = 1
  }
}
