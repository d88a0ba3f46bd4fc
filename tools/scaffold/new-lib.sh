#!/usr/bin/env bash
# Creates an empty, publishable lib shell under libs/<name>.
# Usage: tools/scaffold/new-lib.sh <name> "<one-line purpose>" <dep> [<dep> ...]
set -euo pipefail
name=$1; purpose=$2; shift 2
dir=libs/$name
mkdir -p "$dir/src"
refs=""; deps=""
for d in "$@"; do
  refs="$refs{ \"path\": \"../$d/tsconfig.lib.json\" },"
  deps="$deps\"@mmdb/$d\": \"0.1.0\","
done
refs=${refs%,}; deps=${deps%,}
cat > "$dir/package.json" <<JSON
{
  "name": "@mmdb/$name",
  "version": "0.1.0",
  "description": "$purpose",
  "license": "UNLICENSED",
  "main": "./dist/index.js",
  "types": "./dist/index.d.ts",
  "files": ["dist", "README.md", "DESIGN.md"],
  "dependencies": { $deps }
}
JSON
cat > "$dir/project.json" <<JSON
{
  "name": "$name",
  "\$schema": "../../node_modules/nx/schemas/project-schema.json",
  "sourceRoot": "libs/$name/src",
  "projectType": "library",
  "tags": ["lib:$name"],
  "targets": {
    "build": { "executor": "nx:run-commands", "outputs": ["{projectRoot}/dist"], "options": { "command": "tsc -b libs/$name/tsconfig.lib.json" } },
    "test": { "executor": "nx:run-commands", "options": { "command": "jest -c libs/$name/jest.config.js" } },
    "lint": { "executor": "nx:run-commands", "options": { "command": "eslint libs/$name" } }
  }
}
JSON
cat > "$dir/tsconfig.lib.json" <<JSON
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": {
    "composite": true,
    "rootDir": "src",
    "outDir": "dist",
    "tsBuildInfoFile": "dist/tsconfig.lib.tsbuildinfo",
    "types": ["node"]
  },
  "include": ["src/**/*.ts"],
  "exclude": ["src/**/*.spec.ts", "src/**/*.test.ts", "src/**/testing/**"],
  "references": [$refs]
}
JSON
cat > "$dir/jest.config.js" <<JSON
module.exports = { ...require('../../jest.preset.js'), displayName: '$name', rootDir: __dirname };
JSON
[ -f "$dir/src/index.ts" ] || echo "export {};" > "$dir/src/index.ts"
[ -f "$dir/README.md" ] || printf '# @mmdb/%s\n\n%s\n\nNot built yet: this lib is an empty shell.\n' "$name" "$purpose" > "$dir/README.md"
[ -f "$dir/DESIGN.md" ] || printf '# @mmdb/%s: design\n\nNot built yet.\n' "$name" > "$dir/DESIGN.md"
