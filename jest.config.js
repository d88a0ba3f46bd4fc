// One jest run over every project; each project has its own jest.config.js.
module.exports = {
  projects: ['<rootDir>/libs/*/jest.config.js', '<rootDir>/apps/*/jest.config.js', '<rootDir>/tools/*/jest.config.js'],
};
