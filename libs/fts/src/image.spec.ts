import { isDbError } from '@mmdb/core';
import { FieldIndex } from './field-index';
import { decodeFieldImage, encodeFieldImage } from './image';

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
  return { ...s, docLen: [...s.docLen], lists: s.lists.map((l) => ({ term: l.term, maxTf: l.maxTf, docs: [...l.docs.subarray(0, l.n)], tfs: [...l.tfs.subarray(0, l.n)] })) };
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
