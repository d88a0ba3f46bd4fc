#!/usr/bin/env node
// The provisioning command (built with the server): see tools/provision/README.md.
const { main } = require("../../dist/apps/api/provision.js");
main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`provision: ${e.message}\n`);
  process.exit(1);
});
