/** Spec §4.1: /health is liveness "process is up and the log is mounted": real stores on disk. */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { loadConfig } from '../config';
import { SystemStore } from '../system/system-store';
import { Pressure } from '../tenancy/pressure';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { HealthController } from './health.controller';
import { Metrics } from './metrics.service';
import { Replication } from '../replication/replication.service';
import { decodeTuple } from '@mmdb/storage';

describe('GET /health checks that the log is mounted', () => {
  it('answers ok while the stores are open, and service_unavailable naming a closed store', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'health-'));
    const config = loadConfig({ DB_DATA_DIR: dir, DB_SYNC: '0' });
    const system = await SystemStore.open(dir);
    const pressure = new Pressure(config);
    const tenants = new TenantRegistry(config, pressure, new Metrics(), system);
    const metrics = new Metrics();
    const health = new HealthController(tenants, metrics, new Replication(config, tenants, system, metrics));
    try {
      const { tenant } = await system.createTenant();
      const h = await tenants.get(tenant);
      await expect(health.health()).resolves.toEqual({ status: 'ok' });
      await h.store.close(); // a closed (or failed) tenant store: its log is not mounted
      await expect(health.health()).rejects.toMatchObject({ code: 'service_unavailable', details: { status: 'down', stores: [tenant] } });
      await system.close();
      await expect(health.health()).rejects.toMatchObject({ details: { stores: ['_system', tenant] } });
    } finally {
      pressure.onApplicationShutdown();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('db_corrupt_faults_total', () => {
  it('counts decode faults of stored data', async () => {
    const m = new Metrics();
    const read = async () => Number(/^db_corrupt_faults_total (\d+)/m.exec(await m.registry.metrics())?.[1]);
    const before = await read();
    expect(() => decodeTuple(Buffer.from([0x99]))).toThrow(expect.objectContaining({ code: 'corrupt_log' }));
    expect(await read()).toBe(before + 1);
    expect(await read()).toBe(before + 1);
  });
});
