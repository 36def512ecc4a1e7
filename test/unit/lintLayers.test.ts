// The lint's guards of the layers (docs/architecture.md, layer table): an import a row does not allow
// fails, type-only imports included; an import cycle fails; a src/ file over 300 lines fails; a src/ unit without a row fails;
// and the type-aware rules catch a promise nobody waits for and a switch that misses a case.
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ESLint } from 'eslint'
import { beforeAll, describe, expect, test } from 'vitest'
import { layerRules } from '../../scripts/lint/layers.js'

const root = join(import.meta.dirname, '../..')
const eslint = new ESLint({ cwd: root })

async function rulesHit(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, filePath) })
  return result!.messages.map((m) => `${m.ruleId}: ${m.message}`)
}

describe('the lint guards the layers', () => {
  // the type-aware rules build one TypeScript program for the whole project on the first lint: built
  // here, so no test's own time holds it (on a loaded machine it took over a minute)
  beforeAll(() => rulesHit('export {}\n', 'src/tool/json.ts'), 300_000)

  test('telemetry importing a type of harness/ fails the lint (type-only imports count)', async () => {
    const hits = await rulesHit(
      "import type { HarnessHost } from '../harness/host.js'\nexport type Host = HarnessHost\n",
      'src/telemetry/metrics.ts',
    )
    expect(hits).toContainEqual(expect.stringMatching(/^no-restricted-imports: .*src\/telemetry\/ may not import src\/harness\//))
  })

  test('events importing turn/ fails, and log/ two folders down importing harness/ fails', async () => {
    expect(await rulesHit("export { buildMessages } from '../turn/model.js'\n", 'src/events/toEvents.ts')).toContainEqual(
      expect.stringMatching(/src\/events\/ may not import src\/turn\//),
    )
    expect(await rulesHit("export type { Session } from '../../harness/session.js'\n", 'src/log/commands/index.ts')).toContainEqual(
      expect.stringMatching(/src\/log\/ may not import src\/harness\//),
    )
  })

  test('a package a row never imports fails (bullmq in tool/), an import the row allows passes', async () => {
    expect(await rulesHit("import type { Job } from 'bullmq'\nexport type J = Job\n", 'src/tool/json.ts')).toContainEqual(
      expect.stringMatching(/src\/tool\/ never imports bullmq/),
    )
    const allowed = await rulesHit("export type { LogRecord } from '../log/index.js'\n", 'src/tool/json.ts')
    expect(allowed.filter((h) => h.startsWith('no-restricted-imports'))).toEqual([])
  })

  test('a src file over 300 lines fails the lint', async () => {
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `export const line${i} = ${i}\n`).join('')
    expect(await rulesHit(lines(300), 'src/tool/json.ts')).not.toContainEqual(expect.stringMatching(/^max-lines/))
    expect(await rulesHit(lines(301), 'src/tool/json.ts')).toContainEqual(expect.stringMatching(/^max-lines/))
  })

  test('a promise nobody awaits, an async callback where void is expected and a switch missing a case fail the lint', async () => {
    const floating = 'async function work(): Promise<void> {}\nexport function start(): void {\n  work()\n}\n'
    for (const file of ['src/tool/json.ts', 'test/unit/json.test.ts'])
      expect(await rulesHit(floating, file)).toContainEqual(expect.stringMatching(/^@typescript-eslint\/no-floating-promises/))
    const misused = 'export function later(): void {\n  setTimeout(async () => {}, 1)\n}\n'
    expect(await rulesHit(misused, 'src/tool/json.ts')).toContainEqual(expect.stringMatching(/^@typescript-eslint\/no-misused-promises/))
    const partial =
      "type Kind = 'sleep' | 'ask'\nexport function label(kind: Kind): string {\n  switch (kind) {\n    case 'sleep':\n      return 's'\n  }\n  return ''\n}\n"
    expect(await rulesHit(partial, 'src/tool/json.ts')).toContainEqual(
      expect.stringMatching(/^@typescript-eslint\/switch-exhaustiveness-check/),
    )
  })

  test('an import cycle in src/ fails the lint, type-only imports included, with its chain', async () => {
    // stream.ts imports records.ts: records.ts importing stream.ts back (for a type only) closes a cycle
    const back = "import type { LogEntry } from './stream.js'\nexport type Entry = LogEntry\n"
    expect(await rulesHit(back, 'src/log/records.ts')).toContainEqual(
      expect.stringMatching(
        /^cycles\/no-import-cycle: Import cycle: src\/log\/records\.ts → src\/log\/stream\.ts → .*src\/log\/records\.ts/,
      ),
    )
    // the same import from a file stream.ts does not reach is no cycle
    const hits = await rulesHit(back, 'src/log/deployment.ts')
    expect(hits.filter((h) => h.startsWith('cycles/'))).toEqual([])
  })

  test('a folder of src/ without a row in the layer table stops the lint with its name', () => {
    const copy = mkdtempSync(join(tmpdir(), 'layers-'))
    try {
      mkdirSync(join(copy, 'docs'))
      writeFileSync(join(copy, 'docs/architecture.md'), readFileSync(join(root, 'docs/architecture.md')))
      cpSync(join(root, 'src'), join(copy, 'src'), { recursive: true })
      expect(() => layerRules(copy)).not.toThrow()
      mkdirSync(join(copy, 'src/newconcept'))
      expect(() => layerRules(copy)).toThrow(/src\/newconcept\/ has no row/)
    } finally {
      rmSync(copy, { recursive: true, force: true })
    }
  })
})
