// TypeScript and JavaScript lint: `npm run lint` checks it, `npm run format` fixes what can be fixed
// (import order, prefer-const). Formatting itself is prettier's (.prettierrc.json).
import js from '@eslint/js';
import { importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // What .gitignore lists (eslint does not read it); node_modules is ignored by default.
  { ignores: ['dist/', '**/bench-results/', '**/test-output/', '**/.massgen-rl/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.{ts,mts,cts,js,mjs,cjs}'],
    languageOptions: { globals: { ...globals.node } },
    plugins: { 'import-x': importX },
    rules: {
      // Node built-ins and packages, then the project's own modules; each alphabetized by path.
      'import-x/order': [
        'error',
        {
          groups: [
            ['builtin', 'external'],
            ['internal', 'parent', 'sibling', 'index'],
          ],
          'newlines-between': 'ignore',
          alphabetize: { order: 'asc', caseInsensitive: true },
        },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // A variable a closure reads before its single assignment (a handle set once the closure exists).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Model output, logs and JSON are cleaned of control characters on purpose.
      'no-control-regex': 'off',
    },
  },
  {
    // Tests read parsed JSON and corrupt valid payloads field by field.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
