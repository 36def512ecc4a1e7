import { codecFromEnv, isCodec } from './codecEnv.js'
import type { PayloadCodec } from '../codec/index.js'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { z } from 'zod'
import { ConfigError } from '../errors/index.js'
import { TOOLS_BY_NAME, type Harness } from '../core/index.js'
import type { HostOptions } from '../harness/host.js'

// TOOLS_BY_NAME is a Symbol.for key, so a harness made by another copy of the package (the user's
// node_modules, while this bin is global or npx's) is recognised too.
function isHarness(value: unknown): value is Harness {
  return typeof value === 'object' && value !== null && TOOLS_BY_NAME in value && 'durability' in value && 'adapter' in value
}

const TYPESCRIPT = /\.[cm]?tsx?$/

/** What of tsx's package.json names its ESM API. */
const tsxManifest = z.object({ exports: z.object({ './esm/api': z.object({ import: z.object({ default: z.string() }) }) }) })

/** A require bound to the user's working directory: packages and tsx are looked up from their project. */
const fromCwd = () => createRequire(join(process.cwd(), 'noop.js'))

/**
 * The URL to import for a module path or a package export. A bare specifier is resolved from the
 * working directory first (the user's project), then from this package (its own dependencies).
 */
function moduleUrl(specifier: string): string {
  if (specifier.startsWith('.') || specifier.startsWith('/') || /\.[cm]?[jt]sx?$/.test(specifier))
    return pathToFileURL(resolve(specifier)).href
  try {
    return pathToFileURL(fromCwd().resolve(specifier)).href
  } catch {
    return specifier // an import-only export, or not in the project: let import() resolve it
  }
}

/** Registers tsx's ESM loader from the user's project; a clear ConfigError when it is not installed. */
async function registerTsx(specifier: string): Promise<void> {
  let api: string
  try {
    const manifest = fromCwd().resolve('tsx/package.json')
    const { exports } = tsxManifest.parse(JSON.parse(readFileSync(manifest, 'utf8')))
    api = join(dirname(manifest), exports['./esm/api'].import.default)
  } catch {
    throw new ConfigError(
      `Module ${specifier} is TypeScript and tsx is not installed in this project: run npm i -D tsx, or compile the module and pass the .js file.`,
    )
  }
  const tsx: Record<string, unknown> = await import(pathToFileURL(api).href)
  if (typeof tsx.register !== 'function') throw new ConfigError(`tsx's ESM API (${api}) has no register(): install tsx 4 or later.`)
  tsx.register()
}

/** Imports the module; a TypeScript file that node cannot load by itself is loaded through the project's tsx. */
async function importModule(specifier: string): Promise<Record<string, unknown>> {
  const url = moduleUrl(specifier)
  try {
    const mod: Record<string, unknown> = await import(url)
    return mod
  } catch (error) {
    const unknownExtension = error instanceof Error && 'code' in error && error.code === 'ERR_UNKNOWN_FILE_EXTENSION'
    if (!unknownExtension || !TYPESCRIPT.test(new URL(url, 'file:///').pathname)) throw error
  }
  await registerTsx(specifier)
  // node keeps the failed load of this URL: import it under another one (a query) now that tsx is in
  const again = url.startsWith('file:') ? `${url}?tsx` : url
  const mod: Record<string, unknown> = await import(again)
  return mod
}

/**
 * Loads the harnesses a worker process runs from a module path (relative to the working directory)
 * or a package export: its `default` export, `harnesses` array, or every exported harness. JavaScript
 * modules load as they are; a TypeScript module loads when `tsx` is installed in the user's project.
 */
export async function loadHarnesses(specifier: string | undefined): Promise<Harness[]> {
  return (await loadHostModule(specifier)).harnesses
}

/**
 * A harness module as the worker and sweeper processes load it: its harnesses (loadHarnesses) and,
 * when it exports one, its `retention` (the host option, docs/retention.md: its `export` is code,
 * so it lives in the module), checked by createHarnessHost.
 */
export async function loadHostModule(specifier: string | undefined): Promise<HostModule> {
  if (!specifier) throw new ConfigError('Name a harness module: worker <path-or-package> (or set HARNESS_MODULE).')
  const mod = await importModule(specifier)
  const candidates = [mod.default, mod.harnesses].flatMap((v) => (Array.isArray(v) ? v : [v])).filter(isHarness)
  const found = candidates.length > 0 ? candidates : Object.values(mod).filter(isHarness)
  if (found.length === 0)
    throw new ConfigError(
      `Module ${specifier} exports no harness: export one made by defineHarness (default, named, or in a "harnesses" array).`,
    )
  const harnesses = [...new Set(found)]
  const { retention, codec: exported } = mod
  if (retention !== undefined && !isRetention(retention))
    throw new ConfigError(
      `Module ${specifier} exports a "retention" that is not the host option: export { sessionMs, export(sessionId, jsonl, span?) } (docs/retention.md), or nothing.`,
    )
  if (exported !== undefined && !isCodec(exported))
    throw new ConfigError(
      `Module ${specifier} exports a "codec" that is not a PayloadCodec: export one with encode and decode (docs/encryption.md), or nothing.`,
    )
  // the module's own codec, else the environment's (DH_CODEC_KEYS)
  const codec = exported ?? codecFromEnv()
  return { harnesses, ...(retention === undefined ? {} : { retention }), ...(codec ? { codec } : {}) }
}

/** What a harness module gives a host: its harnesses, and the retention and codec options when it has them. */
export interface HostModule {
  harnesses: Harness[]
  retention?: HostOptions['retention']
  codec?: PayloadCodec
}

/** The host's retention option, as far as the loader checks it (createHarnessHost checks the values). */
function isRetention(value: unknown): value is NonNullable<HostOptions['retention']> {
  return typeof value === 'object' && value !== null && 'export' in value && typeof value.export === 'function'
}
