// Lint for the TypeScript sources, the JS tests, scripts and benchmarks, and the editor
// files (the JavaScript inside nodes/*.html, through eslint-plugin-html).
import tseslint from 'typescript-eslint';
import js from '@eslint/js';
import globals from 'globals';
import html from 'eslint-plugin-html';

/** What the Node-RED editor gives the code of a node's .html file. */
const editorGlobals = { ...globals.browser, RED: 'readonly', $: 'readonly', jQuery: 'readonly' };
/** The shared editor code (resources/iotgw-editor.js) the .html files use. */
const sharedEditorGlobals = { ...editorGlobals, IOTGW: 'readonly' };

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'test/artifacts/**', 'bench/out/**', '.node-red-dev/**'] },
  {
    files: ['src/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-control-regex': 'off',
      // `const node = this` is the Node-RED idiom in node constructors.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['node'] }],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node, ...globals.mocha } },
    rules: { 'no-unused-vars': ['error', { argsIgnorePattern: '^_' }] },
  },
  {
    // Browser tests: the callbacks of page.evaluate() run in the editor page.
    files: ['test/editor/*.test.js', 'test/helpers/browser.js', 'test/helpers/editor.js'],
    languageOptions: { globals: { ...globals.node, ...globals.mocha, ...editorGlobals } },
  },
  {
    // The shared editor code, served from resources/ (plain browser script, no build step).
    files: ['resources/**/*.js'],
    languageOptions: { ecmaVersion: 2020, sourceType: 'script', globals: editorGlobals },
    rules: { 'no-var': 'off' },
  },
  {
    files: ['nodes/**/*.html'],
    plugins: { html },
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 2020, sourceType: 'script', globals: sharedEditorGlobals },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // Editor code runs in every supported browser as written: no build step.
      'no-var': 'off',
      // Reported, not failed: a stylistic rule (fix by removing the backslash).
      'no-useless-escape': 'warn',
    },
  },
);
