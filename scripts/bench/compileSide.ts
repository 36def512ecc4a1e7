// Compiles one side's library for `--against` (the default; `--source` runs the TypeScript under tsx):
// users run the package's compiled JavaScript, and tsx adds a `__name(fn, "…")` call to every closure
// it creates, a per-call cost the package does not have and that grows with the number of closures a
// commit makes. tsc with the side's own tsconfig.build.json (`--rootDir <side>`, so every commit's
// output has the same shape: `<out>/src/index.js`), plus the side's non-TypeScript files of src/ (its
// Lua), a package.json with "type": "module" and the side's node_modules.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export function compileSide(side: string, out: string, tscBin: string): string {
  try {
    execFileSync(
      process.execPath,
      [
        tscBin,
        '-p',
        join(side, 'tsconfig.build.json'),
        '--outDir',
        out,
        '--rootDir',
        side,
        '--declaration',
        'false',
        '--sourceMap',
        'false',
      ],
      { cwd: side, stdio: ['ignore', 'pipe', 'pipe'] },
    )
  } catch (error) {
    // a type error of an older commit under today's @types still emits its JavaScript
    if (!existsSync(join(out, 'src', 'index.js'))) throw error
  }
  cpSync(join(side, 'src'), join(out, 'src'), { recursive: true, filter: (f) => !f.endsWith('.ts') })
  writeFileSync(join(out, 'package.json'), '{ "type": "module" }\n')
  symlinkSync(join(side, 'node_modules'), join(out, 'node_modules'), 'dir')
  return out
}
