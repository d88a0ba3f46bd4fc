module.exports = { ...require('../../jest.preset.js'), displayName: 'sqllogictest', rootDir: __dirname };
