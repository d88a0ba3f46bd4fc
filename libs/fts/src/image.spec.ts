import { isDbError } from '@mmdb/core';
import { FieldIndex } from './field-index';
import { decodeFieldImage, encodeFieldImage, encodeFieldImageChunks } from './image';

const words = ['shock', 'wave', 'flow', 'héat', 'layer', 'x'];
function sample(): FieldIndex {
  const fi = new FieldIndex();
  for (let i = 0; i < 500; i++) {
    const terms = words.filter((_, j) => (i + j) % 3 !== 0 || j === 5);
    fi.putDoc(`d${i}${i % 7 === 0 ? '✓' : ''}`, 3 + (i % 11), terms, terms.map((_, j) => 1 + ((i * j) % 4)));
  }
  for (let i = 0; i < 500; i += 9) fi.removeDoc(`d${i}${i % 7 === 0 ? '✓' : ''}`);
  for (let i = 1; i < 500; i += 13) fi.putDoc(`d${i}${i % 7 === 0 ? '✓' : ''}`, 40, ['flow', 'new'], [5, 1]);
  fi.removeDoc('d1'); // every posting of "x"'s doc d1 goes; "new" keeps the others
  fi.setStats(fi.liveDocs, 12_345);
  return fi;
}
const plain = (fi: FieldIndex) => {
  const s = fi.exportState();
  const lists = [...fi.terms].map(([term, l]) => ({ term, maxTf: l.maxTf, docs: [...l.docs.subarray(0, l.n)], tfs: [...l.tfs.subarray(0, l.n)] }));
  return { ...s, docLen: [...s.docLen], lists };
};

describe('fts checkpoint image', () => {
  it('decodes to the same index (ordinals, lists, bounds, totals), which then changes like the original', () => {
    const a = sample();
    const b = decodeFieldImage(Buffer.concat(encodeFieldImage(a)));
    expect(plain(b)).toEqual(plain(a));
    expect(b.liveDocs).toBe(a.liveDocs);
    // the rebuilt per-doc arena removes exactly what the original's does
    for (const fi of [a, b]) {
      fi.removeDoc('d2');
      fi.putDoc('d3', 7, ['wave'], [2]);
      fi.putDoc('fresh', 2, ['shock', 'x'], [1, 1]);
    }
    expect(plain(b)).toEqual(plain(a));
  });

  it('leaves the long posting lists packed until they are read (issue 25 §2), and re-images a packed list byte for byte', () => {
    const a = sample();
    const img = Buffer.concat(encodeFieldImage(a));
    const b = decodeFieldImage(img);
    // lists of more than 64 postings stay packed; a short one ("new": 38 docs) is decoded into the shared slab at open
    const lists = [...b.terms.values()];
    expect(lists.filter((l) => l.isPacked).map((l) => l.term).sort()).toEqual(['flow', 'héat', 'layer', 'shock', 'wave', 'x']);
    expect(b.terms.get('new')!.n).toBe(a.terms.get('new')!.n);
    expect(b.longLists).toBe(6);
    // the dictionary is there without decoding: n and maxTf answer idf and bounds
    expect(lists.map((l) => [l.term, l.n, l.maxTf])).toEqual([...a.terms.values()].map((l) => [l.term, l.n, l.maxTf]));
    // an image of the still-packed index copies the lists' bytes: the same image
    expect(Buffer.concat(encodeFieldImage(b)).equals(img)).toBe(true);
    expect(b.terms.get('wave')!.docs.subarray(0, 3)).toEqual(a.terms.get('wave')!.docs.subarray(0, 3));
    expect([b.terms.get('wave')!.isPacked, b.terms.get('flow')!.isPacked]).toEqual([false, true]);
    for (const _ of b.unpackSteps());
    expect(lists.some((l) => l.isPacked)).toBe(false);
    expect(plain(b)).toEqual(plain(a));
  });

  it('a short list whose postings are out of order is refused at open with corrupt_log', () => {
    const fi = new FieldIndex();
    fi.putDoc('a', 1, ['t'], [1]);
    fi.putDoc('b', 1, ['t'], [1]);
    const img = Buffer.concat(encodeFieldImage(fi));
    img[img.length - 3] = 0; // the list's runs are its last 4 bytes: gaps [0, 1], tfs [1, 1]; a gap of 0 repeats a doc
    let err: unknown;
    try {
      decodeFieldImage(img);
    } catch (e) {
      err = e;
    }
    expect(isDbError(err) && [err.code, err.message]).toEqual(['corrupt_log', expect.stringContaining('list "t" out of order')]);
  });

  it('a long packed list whose postings are out of order decodes at open and throws corrupt_log when read', () => {
    const fi = new FieldIndex();
    for (let i = 0; i < 70; i++) fi.putDoc(`d${i}`, 1, ['t'], [1]);
    const img = Buffer.concat(encodeFieldImage(fi));
    // the list's runs are its last 140 bytes: gaps [0, 1, 1, …], tfs [1, …]; a gap of 0 repeats a doc
    img[img.length - 71] = 0;
    const b = decodeFieldImage(img);
    let err: unknown;
    try {
      void b.terms.get('t')!.docs;
    } catch (e) {
      err = e;
    }
    expect(isDbError(err) && [err.code, err.message]).toEqual(['corrupt_log', expect.stringContaining('list "t" out of order')]);
  });

  it('decodes from its stored chunks in place (no concatenation), to the index the whole image gives', () => {
    const fi = new FieldIndex();
    for (let i = 0; i < 3000; i++) fi.putDoc(`doc-${i}`, 5 + (i % 9), [`t${i % 40}`, `u${i % 977}`, 'all'], [1 + (i % 3), 1, 2]);
    const whole = Buffer.concat(encodeFieldImage(fi));
    // the writer's own chunking, with a small chunk size: the id lengths and doc lengths runs span chunks
    const chunks = encodeFieldImageChunks(fi, 1_000);
    expect(chunks.length).toBeGreaterThanOrEqual(10);
    expect(Buffer.concat(chunks).equals(whole)).toBe(true);
    const b = decodeFieldImage(chunks);
    expect(plain(b)).toEqual(plain(decodeFieldImage(whole)));
    expect(plain(b)).toEqual(plain(fi));
    expect(() => decodeFieldImage([...chunks, Buffer.from([1])])).toThrow(/trailing/);
    expect(() => decodeFieldImage(chunks.slice(0, -1))).toThrow(/corrupt|truncated|past the end|add up|trailing/);
  });

  it('refuses a truncated or altered image with a corrupt_log-class error', () => {
    const img = Buffer.concat(encodeFieldImage(sample()));
    for (const cut of [1, 7, img.length >> 2, img.length >> 1, img.length - 1]) {
      let err: unknown;
      try {
        decodeFieldImage(img.subarray(0, cut));
      } catch (e) {
        err = e;
      }
      expect(isDbError(err) && err.code).toBe('corrupt_log');
    }
    const v2 = Buffer.from(img);
    v2[0] = 2; // another format version
    expect(() => decodeFieldImage(v2)).toThrow(/version/);
  });
});
