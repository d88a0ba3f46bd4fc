module.exports = { ...require('../../jest.preset.js'), displayName: 'plan', rootDir: __dirname };
