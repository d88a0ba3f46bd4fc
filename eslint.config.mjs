import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';
import jsoncParser from 'jsonc-eslint-parser';

const lib = (name, ...deps) => ({ sourceTag: `lib:${name}`, onlyDependOnLibsWithTags: deps.map((d) => `lib:${d}`) });

export default [
  { ignores: ['**/dist', '**/node_modules', 'data/**', 'coverage/**', '.nx/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: true,
          allowCircularSelfDependency: true,
          allow: [],
          depConstraints: [
            lib('core'),
            lib('plan', 'core'),
            lib('storage', 'core'),
            lib('fts', 'storage', 'core'),
            lib('vector', 'storage', 'core'),
            lib('graph', 'storage', 'core'),
            lib('sql', 'plan', 'storage', 'fts', 'vector', 'graph', 'core'),
            lib('nlq', 'plan', 'core'),
            lib('es-compat', 'plan', 'core'),
            lib('replication', 'storage', 'core'),
            lib('migrations', 'storage', 'core'),
            lib('client'),
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['*'] },
            { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['*'] },
          ],
        },
      ],
    },
  },
  {
    files: ['libs/*/package.json'],
    languageOptions: { parser: jsoncParser },
    plugins: { '@nx': nx },
    rules: {
      '@nx/dependency-checks': [
        'error',
        {
          buildTargets: ['build'],
          checkMissingDependencies: true,
          checkObsoleteDependencies: true,
          checkVersionMismatches: false,
          ignoredFiles: ['{projectRoot}/**/*.spec.ts', '{projectRoot}/test/**/*', '{projectRoot}/jest.config.js'],
        },
      ],
    },
  },
];
