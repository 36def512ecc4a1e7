// Lint: eslint's and typescript-eslint's recommended rules (formatting is prettier's job), the
// type-aware rules that catch a promise nobody waits for, the layer table of docs/architecture.md, no
// import cycle in src/, and the 300-line limit of a src/ file.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import { layerRules } from './scripts/lint/layers.js'
import { cycleRules } from './scripts/lint/cycles.js'

const root = import.meta.dirname

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'examples/*/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `_name` marks a binding kept for its position or to drop a field from a rest object
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // the files of tsconfig.json: checked with the types (one TypeScript program for all of them)
    files: ['{src,test,scripts,workers,examples}/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: root } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // a `default:` is a decision too (a union from a library, most of whose members we ignore)
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
  ...layerRules(root),
  ...cycleRules(root),
  {
    files: ['src/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 300, skipBlankLines: false, skipComments: false }] },
  },
  {
    // plain-JavaScript modules run by node (the bin, example harness modules, this lint's own helpers)
    files: ['**/*.{js,mjs}'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // tests read records as loose JSON
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
)
