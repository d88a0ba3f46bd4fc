import { analyzerFor, fold, tokenize } from './analysis';

const terms = (analyzer: string, text: string, stopwords?: string[]) => analyzerFor({ analyzer, stopwords }).analyze(text).map((t) => t.term);

describe('analysis', () => {
  it('tokenizes Unicode words and numbers, splitting on punctuation', () => {
    expect(tokenize('high-speed flow, Mach 2.5; naïve Größe 東京').map((t) => t.word)).toEqual([
      'high', 'speed', 'flow', 'Mach', '2', '5', 'naïve', 'Größe', '東京',
    ]);
  });

  it('lowercases and folds accents', () => {
    expect(fold('Émile Zoë CAFÉ')).toBe('emile zoe cafe');
    expect(terms('simple', 'Crème Brûlée')).toEqual(['creme', 'brulee']);
  });

  it('english: removes stop words and stems with Porter2, keeping original positions', () => {
    const toks = analyzerFor({ analyzer: 'english' }).analyze('The flows of heated wings');
    expect(toks).toEqual([
      { term: 'flow', pos: 1 },
      { term: 'heat', pos: 3 },
      { term: 'wing', pos: 4 },
    ]);
    expect(terms('english', 'generalization generalizations')).toEqual(['general', 'general']);
  });

  it("drops possessive 's", () => {
    expect(terms('english', "the wing's edge")).toEqual(['wing', 'edg']);
  });

  it('standard: stop words but no stemming; simple: neither', () => {
    expect(terms('standard', 'the running flows')).toEqual(['running', 'flows']);
    expect(terms('simple', 'the running flows')).toEqual(['the', 'running', 'flows']);
  });

  it('stopwords from the manifest replace the list', () => {
    expect(terms('english', 'the flow of air', ['air'])).toEqual(['the', 'flow', 'of']);
  });

  it('keyword: one folded term for the whole text', () => {
    expect(terms('keyword', '  New York Café ')).toEqual(['new york cafe']);
    expect(terms('keyword', '   ')).toEqual([]);
  });

  it('rejects an unknown analyzer with validation_failed', () => {
    expect(() => analyzerFor({ analyzer: 'klingon' })).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });

  it('does not stem numbers or non-Latin words', () => {
    expect(terms('english', '1950s 東京')).toEqual(['1950s', '東京']);
  });

  it('termPositions (the indexing path) agrees with analyze', () => {
    for (const name of ['english', 'standard', 'simple', 'keyword']) {
      const a = analyzerFor({ analyzer: name });
      for (const text of ['The flows of heated wings, flows again', "the wing's edge, o'clock's", 'Crème brûlée 42 x', '']) {
        const want = new Map<string, number[]>();
        const toks = a.analyze(text);
        for (const t of toks) want.set(t.term, [...(want.get(t.term) ?? []), t.pos]);
        expect(a.termPositions(text)).toEqual({ length: toks.length, positions: want });
      }
    }
  });
});
