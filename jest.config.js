// One jest run over every project; each project has its own jest.config.js.
// testTimeout is a global option (ignored inside a project's config): integration tests
// start servers and stores, and a loaded 2-core machine is slow, so allow two minutes.
module.exports = {
  projects: ['<rootDir>/libs/*/jest.config.js', '<rootDir>/apps/*/jest.config.js', '<rootDir>/tools/*/jest.config.js'],
  testTimeout: 120_000,
};
