// `tsx scripts/generateLua.ts`: writes src/log/commands/lua.generated.ts from the .lua files beside it
// (scripts/lib/lua.ts), only when it changed, so an unchanged build touches no file.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { generatedPath, luaModule } from './lib/lua.js'

const text = luaModule()
if (!existsSync(generatedPath) || readFileSync(generatedPath, 'utf8') !== text) writeFileSync(generatedPath, text)
