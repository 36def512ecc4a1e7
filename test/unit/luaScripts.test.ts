// Each Lua script is declared once (src/log/commands/*Scripts.ts, defineScript): its KEYS and ARGV by
// name. The header of its `<name>.lua` lists them again for the reader, one a line, `KEYS[i] <name>:
// what it is` (`KEYS[i..] <name>:` for a trailing list); here every header is checked against its
// declaration, names and order, and the embedded sources (lua.generated.ts) against the files.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import { commandsDir, generatedPath, luaModule, luaSources } from '../../scripts/lib/lua.js'
import { scripts, type AnyScript } from '../../src/log/commands/index.js'

interface Header {
  keys: string[]
  args: string[]
  trailingKeys?: string
  trailingArgs?: string
  malformed: string[]
}

const LINE = /^\s*(KEYS|ARGV)\[(\d+)(\.\.)?\] (\w+)(?::\s|$)/

/** The KEYS and ARGV names of a script's header comment (its first `--[[ ... ]]`). */
function parseHeader(lua: string): Header {
  const start = lua.indexOf('--[[')
  const header = start < 0 ? '' : lua.slice(start, lua.indexOf(']]', start))
  const found: Header = { keys: [], args: [], malformed: [] }
  for (const line of header.split('\n')) {
    if (!/^\s*(KEYS|ARGV)\[/.test(line)) continue
    const match = LINE.exec(line)
    if (!match) {
      found.malformed.push(line.trim())
      continue
    }
    const [, kind, index, trailing, name] = match
    const list = kind === 'KEYS' ? found.keys : found.args
    const tail = kind === 'KEYS' ? found.trailingKeys : found.trailingArgs
    if (Number(index) !== list.length + 1 || tail !== undefined) found.malformed.push(`${line.trim()} (out of order)`)
    if (!trailing) list.push(name!)
    else if (kind === 'KEYS') found.trailingKeys = name
    else found.trailingArgs = name
  }
  return found
}

/** What differs between a script's header and its declaration (nothing: []). */
function drift(script: AnyScript, lua: string): string[] {
  const header = parseHeader(lua)
  const out = header.malformed.map((line) => `${script.name}: malformed header line: ${line}`)
  const compare = (what: string, inHeader: unknown, declared: unknown) => {
    if (JSON.stringify(inHeader) !== JSON.stringify(declared))
      out.push(`${script.name}: ${what} ${JSON.stringify(inHeader)} in the header, ${JSON.stringify(declared)} declared`)
  }
  compare('KEYS', header.keys, script.keys)
  compare('trailing KEYS', header.trailingKeys, script.trailingKeys)
  compare('ARGV', header.args, script.args)
  compare('trailing ARGV', header.trailingArgs, script.trailingArgs)
  return out
}

const files = readdirSync(commandsDir).filter((f) => f.endsWith('.lua'))
const declared: AnyScript[] = Object.values(scripts)
const fileOf = (script: AnyScript) => readFileSync(`${commandsDir}/${script.name}.lua`, 'utf8')

describe('Lua scripts are declared once', () => {
  test('every .lua file of src/log/commands is named <name>.lua and has a declaration of that name, and every declaration a file', () => {
    expect(files.map((f) => f.replace(/\.lua$/, '')).sort()).toEqual(declared.map((s) => s.name).sort())
    for (const file of files) expect(file).toMatch(/^\w+\.lua$/)
    for (const [name, script] of Object.entries(scripts)) expect(script.name).toBe(name)
  })

  test('every header names the KEYS and ARGV of its declaration, in its order', () => {
    expect(declared.flatMap((script) => drift(script, fileOf(script)))).toEqual([])
  })

  test('a header that drifts from its declaration is reported: swapped, renamed, missing, trailing or malformed', () => {
    const { saveStep, stageRecords, addInput } = scripts
    const lua = fileOf(saveStep)
    const swapped = lua.replace('ARGV[4] value:', 'ARGV[4] record:').replace('ARGV[5] record:', 'ARGV[5] value:')
    expect(drift(saveStep, swapped)).toEqual([expect.stringMatching(/^saveStep: ARGV .*"record","value".* in the header/)])
    expect(drift(saveStep, lua.replace('KEYS[2] steps:', 'KEYS[2] stepz:'))).toEqual([expect.stringMatching(/^saveStep: KEYS /)])
    expect(drift(saveStep, lua.replace(/^\s*ARGV\[5\].*\n/m, ''))).toEqual([expect.stringMatching(/^saveStep: ARGV /)])
    expect(drift(stageRecords, fileOf(stageRecords).replace('ARGV[4..] records:', 'ARGV[4..] values:'))).toEqual([
      expect.stringMatching(/^stageRecords: trailing ARGV /),
    ])
    expect(drift(addInput, fileOf(addInput).replace('KEYS[9..] tagIndexes:', 'KEYS[9] tagIndexes:'))).not.toEqual([])
    expect(drift(saveStep, lua.replace('ARGV[1] toolCallId', 'ARGV[1] the toolCallId'))).toContainEqual(
      expect.stringMatching(/malformed header line: ARGV\[1\] the toolCallId$/),
    )
  })

  test('lua.generated.ts holds the .lua files as they are now (npm run build or npm run typecheck writes it)', () => {
    expect(readFileSync(generatedPath, 'utf8'), 'src/log/commands/lua.generated.ts is stale: run `npx tsx scripts/generateLua.ts`').toBe(
      luaModule(),
    )
  })

  test('each declaration sends its file with its --@include fragments inlined, under the sha1 of that text', () => {
    const sources = luaSources()
    for (const script of declared) {
      expect(script.lua).toBe(sources.get(script.name))
      expect(script.lua).not.toMatch(/^--@include/m)
      expect(script.sha).toBe(createHash('sha1').update(script.lua).digest('hex'))
    }
    expect(scripts.landResult.lua).toContain(readFileSync(`${commandsDir}/includes/land.lua`, 'utf8'))
  })
})
