/** At most this many `as` casts in src/ (`npm run lint` fails above it). */
export const CAST_BUDGET: number

/** Every cast of one source text: AsExpression and TypeAssertion nodes whose type is not `const`. */
export function castsIn(fileName: string, text: string): Array<{ line: number; text: string }>

/** Every cast of the .ts files under `<root>/src`, with the file relative to `root`. */
export function countCasts(root: string): Array<{ file: string; line: number; text: string }>

/** The casts by unit of src/: its folder (`http/`) or top-level file (`logger.ts`). */
export function castsByUnit(casts: ReadonlyArray<{ file: string }>): Map<string, number>
