// Builds the server (tsc -b, incremental) before the e2e tests start it as a child process.
const { execFileSync } = require('child_process');
const path = require('path');

module.exports = async () => {
  const root = path.join(__dirname, '../../..');
  if (process.env.MMDB_SKIP_BUILD === '1') return;
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-b', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
};
