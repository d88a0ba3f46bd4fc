module.exports = { ...require('../../jest.preset.js'), displayName: 'nlq', rootDir: __dirname };
