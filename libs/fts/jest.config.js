module.exports = { ...require('../../jest.preset.js'), displayName: 'fts', rootDir: __dirname };
