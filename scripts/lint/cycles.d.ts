import type { Linter } from 'eslint'

/** The no-import-cycle rule for src/ (type-only imports included) as eslint config blocks. */
export function cycleRules(root: string): Linter.Config[]
