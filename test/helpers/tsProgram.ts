// The TypeScript program the API tests read the public surface from: the entry files as a user's
// NodeNext project type-checks them.
import ts from 'typescript'

/** A program over `files` and its type checker. */
export function entryProgram(files: string[]): { program: ts.Program; checker: ts.TypeChecker } {
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  })
  return { program, checker: program.getTypeChecker() }
}
