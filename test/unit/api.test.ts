// The public API: what each entry point of package.json `exports` holds, and that each of its
// declarations carries TSDoc (an @example on the entry points), as an editor shows it to a user.
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const ENTRIES = {
  '.': 'src/index.ts',
  './http': 'src/http/index.ts',
  './dashboard': 'src/dashboard/index.ts',
  './testing': 'src/testing/index.ts',
}
const WITH_EXAMPLE = [
  'durableTool',
  'defineHarness',
  'createHarnessHost',
  'createHarnessHandler',
  'createDashboard',
  'isDurableHarnessError',
  'scriptedModel',
]

const program = ts.createProgram(Object.values(ENTRIES), {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  skipLibCheck: true,
  noEmit: true,
})
const checker = program.getTypeChecker()

function exportsOf(file: string): Array<{ name: string; symbol: ts.Symbol }> {
  const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!
  return checker
    .getExportsOfModule(module)
    .map((e) => ({ name: e.name, symbol: e.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(e) : e }))
}

describe('the public API', () => {
  it('the root export holds what app authors use: no test, operator or internal pieces', () => {
    const names = exportsOf(ENTRIES['.']).map((e) => e.name)
    expect(names).toEqual(
      expect.arrayContaining([
        'durableTool',
        'defineHarness',
        'agentTool',
        'createHarnessHost',
        'isDurableHarnessError',
        'DurableHarnessError',
      ]),
    )
    for (const elsewhere of [
      'scriptedModel',
      'startRedisServer',
      'spawnWorker',
      'createHarnessHandler',
      'createDashboard',
      'Timeline',
      'harnessRecordSchemas',
      'TOOLS_BY_NAME',
      'describeValue',
      'causeText',
    ])
      expect(names).not.toContain(elsewhere)
  })

  it('test and operator pieces live in their subpaths', () => {
    expect(exportsOf(ENTRIES['./testing']).map((e) => e.name)).toEqual(
      expect.arrayContaining(['scriptedModel', 'startRedisServer', 'spawnWorker']),
    )
    expect(exportsOf(ENTRIES['./dashboard']).map((e) => e.name)).toEqual(
      expect.arrayContaining(['createDashboard', 'serveDashboard', 'Timeline']),
    )
    expect(exportsOf(ENTRIES['./http']).map((e) => e.name)).toEqual(expect.arrayContaining(['createHarnessHandler', 'toNodeListener']))
  })

  it.each(Object.entries(ENTRIES))('every declaration exported from %s has TSDoc', (_entry, file) => {
    const undocumented = exportsOf(file)
      .filter(({ symbol }) => symbol.getDocumentationComment(checker).length === 0)
      .map(({ name }) => name)
    expect(undocumented).toEqual([])
  })

  it('the entry points have an @example', () => {
    const all = Object.values(ENTRIES).flatMap(exportsOf)
    const without = WITH_EXAMPLE.filter(
      (name) =>
        !all
          .find((e) => e.name === name)
          ?.symbol.getJsDocTags(checker)
          .some((t) => t.name === 'example'),
    )
    expect(without).toEqual([])
  })
})
