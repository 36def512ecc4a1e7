// Lint: eslint's and typescript-eslint's recommended rules (formatting is prettier's job).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

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
    // plain-JavaScript modules run by node (the bin, example harness modules)
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
