import * as fs from 'fs';
import * as path from 'path';
import { analyzerFor } from './analysis';
import { encodeDocEntry, encodeDocTerms } from './codec';

// The indexing fast path (analyzeDoc: interned ASCII words, flat arrays; encodeDocTerms) must
// store exactly the bytes of the general path (termPositions → encodeDocEntry).
const CRANFIELD = path.resolve(__dirname, '../../../../shared/datasets/cranfield/docs.jsonl');

const tricky = [
  "Wing's flow isn't O'Brien's 'quoted' x's 'tis rock'n'roll AIRFOIL Airfoil 12a 3.5e10",
  "ISN'T WING'S O'BRIEN'S DON'T ABC'S'T X'Y'Z 'S",
  'Café naïve façade wing’s',
  'KELVIN \u212A and the ﬁnal ß',
  '',
  '   ',
  'the of and',
  'flows flow flowing FLOW flowed, flow; flow',
  `${'a'.repeat(300)} b ${'x'.repeat(40)}`,
];

describe('indexing fast path', () => {
  const texts = fs.existsSync(CRANFIELD)
    ? fs
        .readFileSync(CRANFIELD, 'utf8')
        .split('\n')
        .filter(Boolean)
        .slice(0, 200)
        .map((l) => {
          const d = JSON.parse(l) as { title?: string; text?: string };
          return `${d.title ?? ''} ${d.text ?? ''}`;
        })
    : [];

  for (const name of ['english', 'standard', 'simple', 'keyword']) {
    it(`${name}: analyzeDoc + encodeDocTerms store the same bytes as termPositions + encodeDocEntry`, () => {
      const general = analyzerFor({ analyzer: name });
      const fast = analyzerFor({ analyzer: name });
      for (let round = 0; round < 2; round++)
        for (const t of [...tricky, ...texts]) {
          const want = general.termPositions(t);
          const d = fast.analyzeDoc(t);
          expect(d.length).toBe(want.length);
          expect(d.terms).toEqual([...want.positions.keys()]);
          expect([...d.tfs.subarray(0, d.terms.length)]).toEqual([...want.positions.values()].map((p) => p.length));
          expect(encodeDocTerms(d).equals(encodeDocEntry(want.length, want.positions))).toBe(true);
        }
    });
  }

  it('stays exact across the reset of its word table (more than 200,000 distinct words)', () => {
    const general = analyzerFor({ analyzer: 'simple' });
    const fast = analyzerFor({ analyzer: 'simple' });
    const word = (i: number) => `w${i.toString(36)}`;
    const docs: string[] = [];
    for (let d = 0; d < 210; d++) docs.push(Array.from({ length: 1000 }, (_, k) => word(d * 1000 + k)).join(' ') + ' common wing');
    for (const t of [...docs, docs[0], 'common wing WING wing']) {
      const want = general.termPositions(t);
      expect(encodeDocTerms(fast.analyzeDoc(t)).equals(encodeDocEntry(want.length, want.positions))).toBe(true);
    }
  });

  it('reads the Cranfield docs (the comparison above covers real text)', () => {
    expect(texts.length).toBe(200);
  });
});
