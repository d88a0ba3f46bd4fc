import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { hashToken, SystemStore } from './system-store';

const A = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const B = '01BX5ZZKBKACTAV9WEVGEMMVRZ';

describe('SystemStore: token changes from a tenant log (what a follower applies)', () => {
  let dir: string;
  let sys: SystemStore;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'system-'));
    sys = await SystemStore.open(dir);
  });
  afterEach(async () => {
    await sys.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('indexes, re-expires and removes a token, keeping one entry object, and never lets a second tenant claim a hash', () => {
    const secret = 'mmdb_follower-secret';
    const now = Date.now();
    sys.applyTokenChange(A, 'T1', { hash: hashToken(secret), created: now, expires_at: null });
    const e = sys.resolveToken(secret, now);
    expect(typeof e === 'object' && e.tenant).toBe(A);
    expect(sys.knownToken(secret, now)).toBe(e);
    sys.applyTokenChange(A, 'T1', { hash: hashToken(secret), created: now, expires_at: now - 1 }); // rotated out on the leader
    expect(sys.knownToken(secret, now)).toBeUndefined();
    expect(sys.resolveToken(secret, now)).toBe('expired');
    sys.applyTokenChange(A, 'T1', { hash: hashToken(secret), created: now, expires_at: null });
    expect(sys.resolveToken(secret, now)).toBe(e); // the same entry object, alive again
    sys.applyTokenChange(B, 'T2', { hash: hashToken(secret), created: now, expires_at: null });
    expect((sys.resolveToken(secret, now) as { tenant: string }).tenant).toBe(A);
    sys.applyTokenChange(A, 'T1', null); // revoked
    expect(sys.resolveToken(secret, now)).toBe('unknown');
    expect(sys.knownToken(secret, now)).toBeUndefined();
  });
});
