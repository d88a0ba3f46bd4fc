/**
 * Runs the built server with the V8 CPU profiler under control of signals (used by profile.js):
 * the message 'start' on the IPC channel starts a profile; 'stop' stops it and writes `<PROFILE_OUT>`
 * (.cpuprofile), then answers 'written'. (Not a signal: Nest's shutdown hooks own SIGUSR2.)
 * Only the load window is profiled, not start-up or preload.
 */
const fs = require('fs');
const inspector = require('inspector');
const path = require('path');

const session = new inspector.Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: Number(process.env.PROFILE_INTERVAL_US || 200) });
process.on('message', (m) => {
  if (m === 'start') session.post('Profiler.start', () => process.send('started'));
  if (m === 'stop') {
    session.post('Profiler.stop', (err, res) => {
      if (err) throw err;
      fs.writeFileSync(process.env.PROFILE_OUT, JSON.stringify(res.profile));
      process.send('written');
    });
  }
});
require(process.env.PROFILE_MAIN || path.join(__dirname, '../../../dist/apps/api/main.js'));
