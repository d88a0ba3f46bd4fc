import { readFileSync } from 'fs';
import { join } from 'path';
import { DbError } from '@mmdb/core';
import { FRAME_VERSION, decodeFrame, encodeFrame, frameLsn, verifyFrame, writeU64BE } from './frame';

// Golden v1 and v2 fixtures: written once, checked in, never regenerated (see ../FORMAT.md).
const dir = join(__dirname, '../test/fixtures/frames');
const fixture = (name: string) => readFileSync(join(dir, name));

interface Expected {
  version: number;
  epoch: number;
  lsn: number;
  time: number;
  changes: unknown[];
  writes: Array<{ key: string; value: string | null }>;
}

function expected(name: string): Expected {
  return JSON.parse(readFileSync(join(dir, name), 'utf8'));
}

function asHex(f: ReturnType<typeof decodeFrame>) {
  return { ...f, writes: f.writes.map((w) => ({ key: w.key.toString('hex'), value: w.value ? w.value.toString('hex') : null })) };
}

function corruptCode(b: Buffer): string {
  try {
    decodeFrame(b);
    return 'decoded';
  } catch (e) {
    return e instanceof DbError ? `${e.code}: ${e.message}` : String(e);
  }
}

/** Encodes a fixture's expected JSON (its version, its annotations) and compares the bytes with the fixture's. */
function reencodes(name: string): void {
  const e = expected(`${name}.json`) as Expected & { meta?: never };
  const bytes = encodeFrame({
    ...e,
    changes: e.changes as never,
    writes: e.writes.map((w) => ({ key: Buffer.from(w.key, 'hex'), value: w.value === null ? null : Buffer.from(w.value, 'hex') })),
  });
  expect(bytes.equals(fixture(`${name}.frame`))).toBe(true);
  expect(frameLsn(bytes)).toBe(e.lsn);
}

describe('log frame codec v1', () => {
  it.each(['v1-basic', 'v1-no-writes'])('decodes the golden fixture %s', (name) => {
    expect(asHex(decodeFrame(fixture(`${name}.frame`)))).toEqual(expected(`${name}.json`));
  });

  it.each(['v1-basic', 'v1-no-writes'])('encodes %s to the very same bytes', reencodes);

  it('refuses a frame whose body fails its checksum', () => {
    expect(corruptCode(fixture('v1-corrupt-checksum.frame'))).toBe('corrupt_log: log frame: checksum mismatch');
  });

  it('refuses a torn frame by its length', () => {
    expect(corruptCode(fixture('v1-torn.frame'))).toMatch(/^corrupt_log: .*torn write/);
  });

  it('refuses an unknown format version', () => {
    expect(corruptCode(fixture('v1-unknown-version.frame'))).toBe('corrupt_log: log frame: unknown format version 9');
  });

  it('refuses a frame shorter than its header', () => {
    expect(corruptCode(fixture('v1-header-only.frame'))).toMatch(/^corrupt_log: .*shorter than the 9-byte header/);
  });

  it('detects any single flipped bit of the body', () => {
    const good = fixture('v1-basic.frame');
    for (let i = 9; i < good.length; i++) {
      const b = Buffer.from(good);
      b[i] ^= 1 << i % 8;
      expect(corruptCode(b)).toMatch(/^corrupt_log/);
    }
  });
});

describe('log frame codec v2', () => {
  it.each(['v2-basic', 'v2-no-meta'])('decodes the golden fixture %s', (name) => {
    expect(asHex(decodeFrame(fixture(`${name}.frame`)))).toEqual(expected(`${name}.json`));
  });

  it.each(['v2-basic', 'v2-no-meta'])('encodes %s to the very same bytes', reencodes);

  it('writes v2 by default; carries catalogue and migration changes and the annotations', () => {
    const f = decodeFrame(fixture('v2-basic.frame'));
    expect(FRAME_VERSION).toBe(2);
    expect(f.changes.map((c) => c.op)).toEqual(['put', 'delete', 'catalog', 'migration']);
    expect(f.meta).toEqual({ idempotency: { key: '01JGX0000000000000000000K1', fingerprint: 'f1', expires_at: 1767229200000 }, actor: 'token:01JGX0000000000000000000T1', route: 'PUT rows' });
    const { version: _v, ...input } = f;
    expect(decodeFrame(encodeFrame(input)).version).toBe(2);
    expect(() => encodeFrame({ ...input, version: 1 })).toThrow(/no annotations/);
  });

  it.each([
    ['v2-corrupt-checksum', /^corrupt_log: log frame: checksum mismatch$/],
    ['v2-torn', /^corrupt_log: .*torn write/],
    ['v2-trailing', /^corrupt_log: .*1 trailing bytes/],
    ['v2-meta-past-end', /^corrupt_log: .*annotations of 1000 bytes run past the body/],
  ])('refuses %s', (name, why) => {
    expect(corruptCode(fixture(`${name}.frame`))).toMatch(why);
  });

  it('detects every single flipped bit, header included', () => {
    for (const name of ['v2-basic', 'v2-no-meta']) {
      const good = fixture(`${name}.frame`);
      for (let bit = 0; bit < good.length * 8; bit++) {
        const b = Buffer.from(good);
        b[bit >> 3] ^= 1 << (bit & 7);
        expect([bit, corruptCode(b)]).toEqual([bit, expect.stringMatching(/^corrupt_log/)]);
      }
    }
  });
});

describe('verifyFrame (recovery\'s check of the tail it does not replay)', () => {
  const verdict = (b: Buffer, how: (b: Buffer) => unknown) => {
    try {
      how(b);
      return 'ok';
    } catch (e) {
      return e instanceof DbError ? e.code : String(e);
    }
  };
  it('accepts what decodes, with its LSN, and refuses what decode refuses as corrupt_log', () => {
    const names = ['v1-basic', 'v1-no-writes', 'v2-basic', 'v2-no-meta', 'v1-corrupt-checksum', 'v1-torn', 'v1-unknown-version', 'v1-header-only', 'v2-corrupt-checksum', 'v2-torn', 'v2-trailing', 'v2-meta-past-end'];
    for (const name of names) {
      const b = fixture(`${name}.frame`);
      expect([name, verdict(b, verifyFrame)]).toEqual([name, verdict(b, decodeFrame)]);
      if (verdict(b, decodeFrame) === 'ok') expect(verifyFrame(b)).toBe(decodeFrame(b).lsn);
    }
  });
  it('detects every single flipped bit, header included', () => {
    const good = fixture('v2-basic.frame');
    for (let bit = 0; bit < good.length * 8; bit++) {
      const b = Buffer.from(good);
      b[bit >> 3] ^= 1 << (bit & 7);
      expect([bit, verdict(b, verifyFrame)]).toEqual([bit, 'corrupt_log']);
    }
  });
});

describe('frames written by the store', () => {
  it('log put changes exactly as JSON.stringify would (the coordinator pre-serializes them)', async () => {
    const { mkdtempSync, rmSync } = await import('fs');
    const { tmpdir } = await import('os');
    const { TenantStore } = await import('./store');
    const dir = mkdtempSync(join(tmpdir(), 'frame-json-'));
    const store = await TenantStore.open({ dir });
    await store.registerSchema('namespace = "a"\ntable = "b"\nprimary_key = ["k"]\n[[columns]]\nname = "k"\nty = "str"\n[[columns]]\nname = "j"\nty = "json"\n');
    await store.put('a.b', { k: 'x"\u00e9', j: { z: [1, 'two', null], a: 'é' } });
    for await (const f of store.frames(store.lastLsn)) {
      const bytes = encodeFrame(f);
      expect(decodeFrame(bytes)).toEqual(f);
      expect(f.changes[0]).toEqual({ op: 'put', schema: 'a.b', pk: ['x"\u00e9'], version: 1, values: { k: 'x"\u00e9', j: { z: [1, 'two', null], a: 'é' } } });
      const raw = await store.db.get(Buffer.concat([Buffer.from('L'), Buffer.from(f.lsn.toString(16).padStart(16, '0'), 'hex')]));
      expect(raw!.equals(bytes)).toBe(true);
    }
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('writeU64BE', () => {
  it('writes the bytes writeBigUInt64BE writes, below and above 2^32, and refuses what it refuses', () => {
    for (const n of [0, 1, 0xffffffff, 0x100000000, 0x100000005, 1_764_093_000_123, Number.MAX_SAFE_INTEGER]) {
      const a = Buffer.alloc(10);
      const b = Buffer.alloc(10);
      writeU64BE(a, n, 1);
      b.writeBigUInt64BE(BigInt(n), 1);
      expect(a).toEqual(b);
    }
    expect(() => writeU64BE(Buffer.alloc(8), -1, 0)).toThrow(/out of range/);
    expect(() => writeU64BE(Buffer.alloc(8), 1.5, 0)).toThrow(/not an integer/);
  });
});
