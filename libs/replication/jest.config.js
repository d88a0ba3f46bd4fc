module.exports = { ...require('../../jest.preset.js'), displayName: 'replication', rootDir: __dirname };
