// The layer table of docs/architecture.md as eslint config: one `no-restricted-imports` block per unit of
// src/ (a folder or a top-level file) and per folder depth, so a relative import resolves to exactly one unit.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const DOC = 'docs/architecture.md'

/** The rows between the layers markers: unit → { allowed units, forbidden packages }. */
function readTable(root) {
  const text = readFileSync(join(root, DOC), 'utf8')
  const table = /<!-- layers:begin -->([\s\S]*?)<!-- layers:end -->/.exec(text)
  if (!table) throw new Error(`${DOC}: no layer table (between <!-- layers:begin --> and <!-- layers:end -->).`)
  const ticked = (cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1])
  const rows = new Map()
  for (const line of table[1].split('\n')) {
    const cells = line.split('|').slice(1, -1)
    if (cells.length !== 3 || !cells[0].includes('`')) continue
    const [unit] = ticked(cells[0])
    rows.set(unit, { allowed: ticked(cells[1]), packages: ticked(cells[2]) })
  }
  return rows
}

/** Every unit of src/: its folders (`name/`) and top-level files (`name.ts`), and the deepest folder nesting. */
function readSrc(root) {
  const units = []
  let depth = 1
  const walk = (dir, level) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }))
      if (entry.isDirectory()) {
        depth = Math.max(depth, level)
        walk(join(dir, entry.name), level + 1)
      }
  }
  for (const entry of readdirSync(join(root, 'src'), { withFileTypes: true })) {
    if (entry.isDirectory()) {
      units.push(`${entry.name}/`)
      walk(join(root, 'src', entry.name), 2)
    } else if (entry.name.endsWith('.ts')) units.push(entry.name)
  }
  return { units, depth }
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** A regex for a relative import, made `up` folders below src/, that lands in `unit`. */
function unitPattern(unit, up) {
  const toSrc = up === 0 ? '\\./' : `(\\.\\./){${up}}`
  return unit.endsWith('/') ? `^${toSrc}${escape(unit)}` : `^${toSrc}${escape(unit.replace(/\.ts$/, ''))}\\.(js|ts)$`
}

export function layerRules(root) {
  const rows = readTable(root)
  const { units, depth } = readSrc(root)
  const problems = [
    ...units.filter((u) => !rows.has(u)).map((u) => `src/${u} has no row`),
    ...[...rows.keys()].filter((u) => !units.includes(u)).map((u) => `the row ${u} names nothing in src/`),
    ...[...rows].flatMap(([u, row]) => row.allowed.filter((a) => !rows.has(a)).map((a) => `the row ${u} allows ${a}, which has no row`)),
  ]
  if (problems.length) throw new Error(`${DOC}, layer table: ${problems.join('; ')}.`)

  const blocks = []
  for (const [unit, row] of rows) {
    const forbidden = units.filter((u) => u !== unit && !row.allowed.includes(u))
    const levels = unit.endsWith('/') ? Array.from({ length: depth }, (_, i) => i + 1) : [0]
    for (const up of levels) {
      const files = unit.endsWith('/') ? [`src/${unit}${'*/'.repeat(up - 1)}*.ts`] : [`src/${unit}`]
      const patterns = [
        ...forbidden.map((u) => ({
          regex: unitPattern(u, up),
          message: `src/${unit} may not import src/${u}: the layer table in ${DOC} says what it may use.`,
        })),
        ...row.packages.map((p) => ({
          regex: `^${escape(p)}(/|$)`,
          message: `src/${unit} never imports ${p} (layer table in ${DOC}).`,
        })),
      ]
      blocks.push({ files, rules: { 'no-restricted-imports': ['error', { patterns }] } })
    }
  }
  return blocks
}
