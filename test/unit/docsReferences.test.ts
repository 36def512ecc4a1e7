// The docs point into the code and into each other by name: a decision record by its file
// (docs/decisions/<slug>.md), a source file by its path, a function by `file:`name`` in the code-path
// map of docs/architecture.md. Names drift when code moves; here every such reference is checked
// against the tree, so a rename that leaves a doc behind fails the suite instead of misleading a reader.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const recordsDir = join(root, 'docs', 'decisions')
const MAX_RECORD_LINES = 60
/** The index of the records (spelled in two parts so this file does not name it as a reference). */
const INDEX = join(root, 'docs', 'decisions' + '.md')

/** Every file under `dir` (relative to the repository) whose name passes `keep`, node_modules left out. */
function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  const found: string[] = []
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      if (name === 'node_modules' || name.startsWith('.')) continue
      const path = join(at, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (keep(name)) found.push(path)
    }
  }
  if (existsSync(join(root, dir))) walk(join(root, dir))
  return found
}

const sources = [
  ...filesUnder('src', (n) => /\.(ts|lua)$/.test(n)),
  ...filesUnder('scripts', (n) => /\.(ts|js|mjs|lua)$/.test(n)),
  ...filesUnder('test', (n) => /\.ts$/.test(n)),
]
const docs = [...filesUnder('docs', (n) => n.endsWith('.md')), join(root, 'README.md')]
const records = readdirSync(recordsDir)
  .filter((n) => n.endsWith('.md'))
  .sort()

/** `docs/decisions/<slug>.md` references in a text. */
function recordReferences(text: string): string[] {
  return [...text.matchAll(/docs\/decisions\/([A-Za-z0-9._-]+\.md)/g)].map((m) => m[1]!)
}

/** What is wrong with a decision record's text: its shape and length. */
function recordProblems(text: string): string[] {
  const problems: string[] = []
  const lines = text.replace(/\n$/, '').split('\n')
  if (lines.length > MAX_RECORD_LINES) problems.push(`${lines.length} lines (at most ${MAX_RECORD_LINES})`)
  if (!lines[0]?.startsWith('# ')) problems.push('does not start with "# Title"')
  for (const part of ['Context', 'Decision', 'Consequences'])
    if (!new RegExp(`^\\*\\*${part}\\.?\\*\\*`, 'm').test(text)) problems.push(`no **${part}** paragraph`)
  return problems
}

/**
 * What docs/architecture.md names that the tree does not have: each `src/<path>.ts` must exist, and
 * each `src/<path>.ts:`Name`` or `:`Class.method`` (the code-path map's form) must name words that
 * occur in that file.
 */
function architectureProblems(doc: string, readSource: (path: string) => string | undefined): string[] {
  const problems: string[] = []
  for (const path of new Set(doc.match(/\bsrc\/[\w./-]+\.ts\b/g) ?? []))
    if (readSource(path) === undefined) problems.push(`${path}: no such file`)
  for (const [, path, name] of doc.matchAll(/\b(src\/[\w./-]+\.ts):`([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)`/g)) {
    const source = readSource(path!)
    if (source === undefined) continue
    const missing = name!.split('.').filter((part) => !new RegExp(`(^|[^\\w$])${part.replace(/\$/g, '\\$')}([^\\w$]|$)`).test(source))
    if (missing.length) problems.push(`${path}:\`${name}\`: ${missing.join(', ')} not in the file`)
  }
  return problems
}

const readSource = (path: string) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : undefined)

describe('decision records', () => {
  test('every docs/decisions/*.md named in src/, scripts/, test/, docs/ or README.md exists', () => {
    const dangling: string[] = []
    for (const file of [...sources, ...docs])
      for (const slug of recordReferences(readFileSync(file, 'utf8')))
        if (!records.includes(slug)) dangling.push(`${relative(root, file)} names docs/decisions/${slug}`)
    expect(dangling).toEqual([])
  })

  test('code and scripts point to a record, not into the index by a section title', () => {
    // the index's path as a quoted file name (the package test expects it in the tarball) is not a reference
    const named = new RegExp(`decisions\\.md`, 'g')
    const quoted = /^['"`]docs\/decisions\.md['"`]$/
    const stale = sources.flatMap((file) => {
      const text = readFileSync(file, 'utf8')
      return [...text.matchAll(named)]
        .filter((m) => !quoted.test(text.slice(m.index - 6, m.index + 13)))
        .map((m) => `${relative(root, file)}: …${text.slice(Math.max(0, m.index - 30), m.index + 30)}…`)
    })
    expect(stale).toEqual([])
  })

  test(`every record has a title, Context, Decision and Consequences, in at most ${MAX_RECORD_LINES} lines`, () => {
    const problems = records.flatMap((name) => recordProblems(readFileSync(join(recordsDir, name), 'utf8')).map((p) => `${name}: ${p}`))
    expect(problems).toEqual([])
  })

  test('the index lists every record, and each of its links is a record', () => {
    const index = readFileSync(INDEX, 'utf8')
    const linked = [...index.matchAll(/\]\(decisions\/([^)]+)\)/g)].map((m) => m[1]!)
    expect(records.filter((name) => !linked.includes(name))).toEqual([])
    expect(linked.filter((name) => !records.includes(name))).toEqual([])
  })

  test('the record checks find a long or shapeless record', () => {
    const long = `# T\n\n**Context.** c\n\n**Decision.** d\n\n**Consequences.** e\n${'x\n'.repeat(MAX_RECORD_LINES)}`
    expect(recordProblems(long)).toEqual([`${MAX_RECORD_LINES + 7} lines (at most ${MAX_RECORD_LINES})`])
    expect(recordProblems('Title\n\n**Decision.** d\n')).toEqual([
      'does not start with "# Title"',
      'no **Context** paragraph',
      'no **Consequences** paragraph',
    ])
  })
})

describe("docs/architecture.md's code map", () => {
  const doc = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8')

  test('every src/ path it names exists, and every file:`name` occurs in that file', () => {
    expect(architectureProblems(doc, readSource)).toEqual([])
  })

  test('the check finds a renamed function, a renamed method and a moved file', () => {
    const sample = [
      '| a | src/turn/fold.ts:`foldTurn` |',
      '| b | src/turn/fold.ts:`foldTurnRenamed` |',
      '| c | src/log/sessionLog.ts:`SessionLog.noSuchMethod` |',
      '| d | src/turn/movedAway.ts:`foldTurn` |',
    ].join('\n')
    expect(architectureProblems(sample, readSource)).toEqual([
      'src/turn/movedAway.ts: no such file',
      'src/turn/fold.ts:`foldTurnRenamed`: foldTurnRenamed not in the file',
      'src/log/sessionLog.ts:`SessionLog.noSuchMethod`: noSuchMethod not in the file',
    ])
  })
})
