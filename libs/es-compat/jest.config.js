module.exports = { ...require('../../jest.preset.js'), displayName: 'es-compat', rootDir: __dirname };
