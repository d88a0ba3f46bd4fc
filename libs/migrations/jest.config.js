module.exports = { ...require('../../jest.preset.js'), displayName: 'migrations', rootDir: __dirname };
