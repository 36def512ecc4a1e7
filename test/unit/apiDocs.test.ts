// The reference tables are complete: every public member of the host (`HarnessHost`, with what it
// inherits) and of a session (`Session`, and its `log`) has a row in the API tables of
// docs/harness.md, and every command of the `harness` CLI (main.ts's own command table) a row, with
// each of its options, in the one CLI table of docs/operations.md. The members are read with the
// TypeScript checker from src/index.ts, so a method added to the code without its row fails here.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import ts from 'typescript'
import { entryProgram } from '../helpers/tsProgram.js'
import { describe, expect, it } from 'vitest'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const read = (path: string) => readFileSync(join(root, path), 'utf8')

const { program, checker } = entryProgram([join(root, 'src/index.ts')])

/** The type an export of src/index.ts names (an interface, or a class's instance type). */
function exportedType(name: string): ts.Type {
  const module = checker.getSymbolAtLocation(program.getSourceFile(join(root, 'src/index.ts'))!)!
  const found = checker.getExportsOfModule(module).find((e) => e.name === name)
  if (!found) throw new Error(`src/index.ts exports no ${name}`)
  const symbol = found.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(found) : found
  return checker.getDeclaredTypeOfSymbol(symbol)
}

/** A type's public members (inherited ones included; private, protected and #-named left out). */
function publicMembers(type: ts.Type): ts.Symbol[] {
  return checker.getPropertiesOfType(type).filter((member) => {
    if (member.name.startsWith('#') || member.name.startsWith('__')) return false
    const flags = (member.declarations ?? []).map((d) => ts.getCombinedModifierFlags(d))
    return !flags.some((f) => f & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected))
  })
}

/** The cells of a Markdown table row (`\|` inside a cell is no separator). */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim())
}

/** The first cells of every table row of a page. */
function firstCells(markdown: string): string[] {
  return markdown
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line))
    .map((line) => cells(line)[0]!)
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** `` `host.name `` followed by its arguments, a comma or the closing backtick, not a longer name. */
const mentions = (cell: string, qualified: string) => new RegExp(`\`${escape(qualified)}(?![A-Za-z0-9_$])`).test(cell)

describe('docs/harness.md lists the whole API of the host and the session', () => {
  const rows = firstCells(read('docs/harness.md'))
  const missing = (owner: string, type: ts.Type) =>
    publicMembers(type)
      .map((m) => `${owner}.${m.name}`)
      .filter((qualified) => !rows.some((cell) => mentions(cell, qualified)))

  it('every member of HarnessHost (with HostOperations, HostEvents, HostSchedules) has a row', () => {
    const members = publicMembers(exportedType('HarnessHost')).map((m) => m.name)
    // what the issue found missing is among what this test sees
    expect(members).toEqual(expect.arrayContaining(['turns', 'replay', 'cancel', 'pause', 'resume', 'sendEvent', 'schedule']))
    expect(missing('host', exportedType('HarnessHost'))).toEqual([])
  })

  it('every public member of Session, and of its log, has a row', () => {
    const session = exportedType('Session')
    const members = publicMembers(session).map((m) => m.name)
    expect(members).toEqual(expect.arrayContaining(['prompt', 'settled', 'abort', 'rerun', 'runTool', 'log']))
    expect(members).not.toContain('deps')
    expect(missing('session', session)).toEqual([])
    const log = publicMembers(session).find((m) => m.name === 'log')!
    expect(missing('session.log', checker.getTypeOfSymbol(log))).toEqual([])
  })

  it("the prompt row names every option of PromptOptions, and abort's row its options argument", () => {
    const prompt = rows.find((cell) => mentions(cell, 'session.prompt'))!
    for (const option of publicMembers(exportedType('PromptOptions'))) expect(prompt).toContain(`${option.name}?`)
    expect(rows.find((cell) => mentions(cell, 'session.abort'))).toMatch(/\{ principal\? \}/)
  })
})

interface CliCommand {
  name: string
  options: Record<string, unknown>
}

/** The commands of main.ts's COMMANDS table, imported from the modules main.ts imports them from. */
async function cliCommands(): Promise<CliCommand[]> {
  const path = join(root, 'src/cli/main.ts')
  const source = ts.createSourceFile(path, read('src/cli/main.ts'), ts.ScriptTarget.Latest, true)
  const from = new Map<string, { module: string; name: string }>()
  let listed: string[] = []
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const bindings = statement.importClause?.namedBindings
      if (bindings && ts.isNamedImports(bindings))
        for (const e of bindings.elements)
          from.set(e.name.text, { module: statement.moduleSpecifier.text, name: (e.propertyName ?? e.name).text })
    }
    if (ts.isVariableStatement(statement))
      for (const d of statement.declarationList.declarations)
        if (ts.isIdentifier(d.name) && d.name.text === 'COMMANDS' && d.initializer && ts.isArrayLiteralExpression(d.initializer))
          listed = d.initializer.elements.map((e) => e.getText(source))
  }
  expect(listed.length).toBeGreaterThan(10)
  return Promise.all(
    listed.map(async (identifier) => {
      const origin = from.get(identifier)
      if (!origin) throw new Error(`main.ts lists ${identifier}, imported from nowhere`)
      const file = join(root, 'src/cli', origin.module.replace(/\.js$/, '.ts'))
      const module = (await import(pathToFileURL(file).href)) as Record<string, CliCommand>
      return module[origin.name]!
    }),
  )
}

/** The first cells of the rows of the first table in the section `## The \`harness\` CLI`, up to its end. */
function cliTableRows(): string[] {
  const page = read('docs/operations.md')
  const section = page.slice(page.indexOf('## The `harness` CLI'))
  const lines = section.split('\n')
  const start = lines.findIndex((line) => line.startsWith('| command |'))
  expect(start).toBeGreaterThan(0)
  const rows: string[] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    rows.push(cells(line)[0]!)
  }
  return rows
}

describe('docs/operations.md lists every command of the harness CLI', () => {
  it('each command has a row of the one CLI table, naming each of its options', async () => {
    const rows = cliTableRows()
    const commands = await cliCommands()
    expect(commands.map((c) => c.name)).toEqual(expect.arrayContaining(['event', 'schedules', 'check-deploy']))
    const problems: string[] = []
    for (const command of commands) {
      const own = rows.filter((cell) => new RegExp(`\`harness ${escape(command.name)}(?=[\\s\`])`).test(cell))
      if (own.length === 0) problems.push(`no row for \`harness ${command.name}\``)
      else
        for (const option of Object.keys(command.options))
          if (!own.some((cell) => new RegExp(`--${escape(option)}(?![A-Za-z0-9-])`).test(cell)))
            problems.push(`\`harness ${command.name}\`: no --${option}`)
    }
    expect(problems).toEqual([])
  })

  it('the table lists no command the CLI does not have', async () => {
    const names = new Set((await cliCommands()).map((c) => c.name))
    const documented = cliTableRows().flatMap((cell) => [...cell.matchAll(/`harness ([a-z-]+)/g)].map((m) => m[1]!))
    expect(documented.filter((name) => !names.has(name))).toEqual([])
  })
})
