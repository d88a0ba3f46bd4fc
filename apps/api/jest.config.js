module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'api',
  rootDir: __dirname,
  // e2e tests run the built server (dist/apps/api/main.js): build it once per run.
  globalSetup: '<rootDir>/test/global-setup.js',
  testTimeout: 60_000,
};
