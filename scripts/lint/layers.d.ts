import type { Linter } from 'eslint'

/** The layer table of docs/architecture.md under `root` as eslint config blocks; throws when a src/ unit has no row. */
export function layerRules(root: string): Linter.Config[]
