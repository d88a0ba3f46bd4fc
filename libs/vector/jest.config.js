module.exports = { ...require('../../jest.preset.js'), displayName: 'vector', rootDir: __dirname };
