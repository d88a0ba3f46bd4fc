module.exports = { ...require('../../jest.preset.js'), displayName: 'graph', rootDir: __dirname };
