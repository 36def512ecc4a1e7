import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ConfigError } from '../errors.js'
import { TOOLS_BY_NAME, type Harness } from '../harnessTypes.js'

function isHarness(value: unknown): value is Harness {
  return typeof value === 'object' && value !== null && TOOLS_BY_NAME in value && 'durability' in value && 'adapter' in value
}

/**
 * Loads the harnesses a worker process runs from a module path (relative to the working directory)
 * or a package export: its `default` export, `harnesses` array, or every exported harness.
 */
export async function loadHarnesses(specifier: string | undefined): Promise<Harness[]> {
  if (!specifier) throw new ConfigError('Name a harness module: worker <path-or-package> (or set HARNESS_MODULE).')
  const url =
    specifier.startsWith('.') || specifier.startsWith('/') || /\.[cm]?[jt]s$/.test(specifier)
      ? pathToFileURL(resolve(specifier)).href
      : specifier
  const mod = (await import(url)) as Record<string, unknown>
  const candidates = [mod.default, mod.harnesses].flatMap((v) => (Array.isArray(v) ? v : [v])).filter(isHarness)
  const found = candidates.length > 0 ? candidates : Object.values(mod).filter(isHarness)
  if (found.length === 0)
    throw new ConfigError(
      `Module ${specifier} exports no harness: export one made by defineHarness (default, named, or in a "harnesses" array).`,
    )
  return [...new Set(found)]
}
