import { Doc, type IndexView } from './doc';
import { flatten, type JsonObject } from './mapping';
import { analyze, chainName, terms } from './analysis';
import { checkAnalysis, resolveAnalyzer } from './fields';
import { porterStem } from './porter';
import { runAggs, type AggCtx } from './aggs';
import { compile } from './query';
import { KahanSum } from './agg-util';

/** An index view of `sources` under a mapping's properties. */
function viewOf(properties: JsonObject, sources: JsonObject[]): IndexView {
  const mappings = { properties };
  const v: IndexView = { name: 'test', uuid: 'u', fields: flatten(mappings), settings: {}, mappings, docs: [], stats: new Map() };
  (v as { docs: Doc[] }).docs = sources.map((s, i) => new Doc({ _id: String(i + 1), _source: s, _version: 1, _seq_no: i, _primary_term: 1 }, v));
  return v;
}

const ctx = (v: IndexView): AggCtx => ({ ixs: [v], allDocs: v.docs, typedKeys: false, maxBuckets: 100, buckets: 0, filter: (q) => { const s = compile({ ix: v }, q); return (d) => s(d) !== null; }, topHits: () => ({}), score: () => 1 });

describe('porter_stem (Lucene PorterStemmer)', () => {
  it("stems Porter's reference vocabulary as the reference implementation does", () => {
    // pairs from M. F. Porter's published voc.txt / output.txt and the 1980 paper's examples
    const pairs: Array<[string, string]> = [
      ['caresses', 'caress'], ['ponies', 'poni'], ['ties', 'ti'], ['caress', 'caress'], ['cats', 'cat'],
      ['feed', 'feed'], ['agreed', 'agre'], ['plastered', 'plaster'], ['bled', 'bled'], ['motoring', 'motor'],
      ['sing', 'sing'], ['conflated', 'conflat'], ['troubled', 'troubl'], ['sized', 'size'], ['hopping', 'hop'],
      ['tanned', 'tan'], ['falling', 'fall'], ['hissing', 'hiss'], ['fizzed', 'fizz'], ['failing', 'fail'],
      ['filing', 'file'], ['happy', 'happi'], ['sky', 'sky'], ['relational', 'relat'], ['conditional', 'condit'],
      ['rational', 'ration'], ['valenci', 'valenc'], ['digitizer', 'digit'], ['conformabli', 'conform'],
      ['radicalli', 'radic'], ['differentli', 'differ'], ['vileli', 'vile'], ['analogousli', 'analog'],
      ['vietnamization', 'vietnam'], ['predication', 'predic'], ['operator', 'oper'], ['feudalism', 'feudal'],
      ['decisiveness', 'decis'], ['hopefulness', 'hope'], ['callousness', 'callous'], ['formaliti', 'formal'],
      ['sensitiviti', 'sensit'], ['sensibiliti', 'sensibl'], ['triplicate', 'triplic'], ['formative', 'form'],
      ['formalize', 'formal'], ['electriciti', 'electr'], ['electrical', 'electr'], ['hopeful', 'hope'],
      ['goodness', 'good'], ['revival', 'reviv'], ['allowance', 'allow'], ['inference', 'infer'],
      ['airliner', 'airlin'], ['gyroscopic', 'gyroscop'], ['adjustable', 'adjust'], ['defensible', 'defens'],
      ['irritant', 'irrit'], ['replacement', 'replac'], ['adjustment', 'adjust'], ['dependent', 'depend'],
      ['adoption', 'adopt'], ['homologou', 'homolog'], ['communism', 'commun'], ['activate', 'activ'],
      ['angulariti', 'angular'], ['homologous', 'homolog'], ['effective', 'effect'], ['bowdlerize', 'bowdler'],
      ['probate', 'probat'], ['rate', 'rate'], ['cease', 'ceas'], ['controll', 'control'], ['roll', 'roll'],
      ['generously', 'gener'], ['running', 'run'], ['easily', 'easili'], ['archaeology', 'archaeolog'],
      ['is', 'is'], ['as', 'as'], ['news', 'new'],
    ];
    expect(pairs.map(([w]) => [w, porterStem(w)])).toEqual(pairs);
  });

  it('the english analyzer: possessives, lowercase, english stop words, porter_stem', () => {
    // Elasticsearch 7 `_analyze` with analyzer english answers these terms
    expect(terms("The QUICK foxes' John's jumping over the lazy dogs and generously running", 'english'))
      .toEqual(['quick', 'fox', 'john', 'jump', 'over', 'lazi', 'dog', 'gener', 'run']);
    expect(terms('is this relational?', 'english')).toEqual(['relat']);
  });
});

describe('metric sums as Elasticsearch adds doubles (compensated summation)', () => {
  const view = (sources: JsonObject[]) => viewOf({ d: { type: 'double' }, w: { type: 'double' } }, sources);

  it('sum, avg, stats and extended_stats of ten 0.1 values are 1.0 and 0.1 (a plain loop gives 0.9999999999999999)', () => {
    const v = view(Array.from({ length: 10 }, () => ({ d: 0.1 })));
    const r = runAggs({ s: { sum: { field: 'd' } }, a: { avg: { field: 'd' } }, st: { stats: { field: 'd' } }, x: { extended_stats: { field: 'd' } } }, v.docs, ctx(v));
    expect(r.s).toEqual({ value: 1 });
    expect(r.a).toEqual({ value: 0.1 });
    expect((r.st as JsonObject).sum).toBe(1);
    expect((r.x as JsonObject).sum).toBe(1);
    expect((r.x as JsonObject).sum_of_squares).toBe(new KahanSum().add(0.1 * 0.1).add(0.1 * 0.1).add(0.1 * 0.1).add(0.1 * 0.1).add(0.1 * 0.1).add(0.1 * 0.1).add(0.1 * 0.1).add(0.1 * 0.1).add(0.1 * 0.1).add(0.1 * 0.1).value);
  });

  it('a sum holding a large and small values keeps the small ones, as Kahan summation does', () => {
    const v = view([{ d: 1e16 }, { d: 1 }, { d: 1 }, { d: -1e16 }]);
    expect(runAggs({ s: { sum: { field: 'd' } } }, v.docs, ctx(v)).s).toEqual({ value: 2 });
  });

  it('weighted_avg counts every value of a multi-valued field with the document weight', () => {
    const v = view([{ d: [1, 3], w: 2 }, { d: 10, w: 1 }]);
    // (1·2 + 3·2 + 10·1) / (2 + 2 + 1)
    expect(runAggs({ a: { weighted_avg: { value: { field: 'd' }, weight: { field: 'w' } } } }, v.docs, ctx(v)).a).toEqual({ value: 18 / 5 });
  });
});

describe('significant_terms heuristics and significant_text', () => {
  const view = (sources: JsonObject[]) => viewOf({ text: { type: 'text' }, class: { type: 'keyword' } }, sources);
  type Buckets = { buckets: Array<{ key: string; sig: { buckets: Array<{ key: string; score: number }> } }> };

  it('scores with jlh, chi_square, mutual_information, gnd and percentage as Elasticsearch computes them', () => {
    const v = view([['good', 'good'], ['good', 'good'], ['bad', 'bad'], ['bad', 'bad'], ['good bad', 'good'], ['good bad', 'bad'], ['bad', 'bad']].map(([text, c]) => ({ text, class: c })));
    const score = (h: JsonObject) => ((runAggs({ c: { terms: { field: 'class' }, aggs: { sig: { significant_terms: { field: 'class', min_doc_count: 1, ...h } } } } }, v.docs, ctx(v)).c as unknown as Buckets).buckets[0].sig.buckets[0]);
    // bucket "bad": 4 of 4 documents in the subset, 4 of 7 in the index
    expect(score({}).score).toBeCloseTo((1 - 4 / 7) * (7 / 4), 12);
    expect(score({ chi_square: {} }).score).toBe(7);
    expect(score({ mutual_information: {} }).score).toBeCloseTo(((3 / 7) * Math.log(7 / 3) + (4 / 7) * Math.log(7 / 4)) / Math.log(2), 12);
    expect(score({ gnd: {} }).score).toBe(1);
    expect(score({ percentage: {} }).score).toBe(1);
    expect(score({ include: ['bad', 'good'] }).key).toBe('bad');
    const none = runAggs({ c: { terms: { field: 'class' }, aggs: { sig: { significant_terms: { field: 'class', min_doc_count: 1, exclude: ['bad', 'good'] } } } } }, v.docs, ctx(v)).c as unknown as Buckets;
    expect(none.buckets.map((b) => b.sig.buckets.length)).toEqual([0, 0]);
    expect(() => runAggs({ s: { significant_terms: { field: 'class', jlp: {} } } }, v.docs, ctx(v))).toThrow('[significant_terms] unknown field [jlp] did you mean [jlh]?');
  });

  it('significant_text re-analyzes the text; filter_duplicate_text drops runs of six tokens seen before', () => {
    const v = view([
      ['good noisewords1 g1 g2 g3 g4 g5 g6', 'good'], ['good noisewords2 g1 g2 g3 g4 g5 g6', 'good'],
      ['bad noisewords3 b1 b2 b3 b4 b5 b6', 'bad'], ['bad noisewords4 b1 b2 b3 b4 b5 b6', 'bad'],
      ['good bad noisewords5 gb1 gb2 gb3 gb4 gb5 gb6', 'good'], ['good bad noisewords6 gb1 gb2 gb3 gb4 gb5 gb6', 'bad'],
      ['bad noisewords7 b1 b2 b3 b4 b5 b6', 'bad'],
    ].map(([text, c]) => ({ text, class: c })));
    const keys = (dedup: boolean) => (runAggs({ c: { terms: { field: 'class' }, aggs: { sig: { significant_text: { field: 'text', filter_duplicate_text: dedup } } } } }, v.docs, ctx(v)).c as unknown as Buckets)
      .buckets.map((b) => [b.key, b.sig.buckets.map((x) => x.key)]);
    expect(keys(true)).toEqual([['bad', ['bad']], ['good', ['good']]]);
    expect(keys(false)[0][1]).toEqual(['b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'bad']);
  });
});

describe('custom analyzers (analysis chains) resolved from the index settings', () => {
  const settings = {
    'index.analysis.analyzer.folded.type': 'custom',
    'index.analysis.analyzer.folded.tokenizer': 'whitespace',
    'index.analysis.analyzer.folded.char_filter': ['html_strip'],
    'index.analysis.analyzer.folded.filter': ['lowercase', 'asciifolding', 'my_stop', 'my_syn', 'porter_stem'],
    'index.analysis.filter.my_stop.type': 'stop',
    'index.analysis.filter.my_stop.stopwords': ['the', 'a'],
    'index.analysis.filter.my_syn.type': 'synonym',
    'index.analysis.filter.my_syn.synonyms': ['quick, fast', 'automobile => car'],
    'index.analysis.analyzer.grams.tokenizer': 'standard',
    'index.analysis.analyzer.grams.filter': ['lowercase', 'shingles'],
    'index.analysis.filter.shingles.type': 'shingle',
    'index.analysis.filter.shingles.output_unigrams': false,
    'index.analysis.analyzer.snow.type': 'snowball',
    'index.analysis.analyzer.plain.tokenizer': 'standard',
    'index.analysis.analyzer.plain.filter': ['lowercase'],
  };
  const ix = { settings } as unknown as IndexView;
  const run = (name: string, text: string) => analyze(text, resolveAnalyzer(ix, name)).map((t) => [t.term, t.pos]);

  it('char filters, tokenizer and filters in order; a stop word leaves its position; a synonym shares its word\'s', () => {
    expect(run('folded', '<b>The</b> Quick Automobile were Café-running')).toEqual([
      ['quick', 1], ['fast', 1], ['car', 2], ['were', 3], ['cafe-run', 4],
    ]);
    expect(run('grams', 'the quick brown')).toEqual([['the quick', 0], ['quick brown', 1]]);
    // ad-hoc definitions: a long token split at max_token_length, a pattern tokenizer, edge n-grams
    const chain = (spec: object, text: string) => analyze(text, chainName({ char_filter: [], filter: [], ...spec } as never)).map((t) => t.term);
    expect(chain({ tokenizer: { type: 'standard', max_token_length: 3 } }, 'abcdefg hi')).toEqual(['abc', 'def', 'g', 'hi']);
    expect(chain({ tokenizer: { type: 'pattern', pattern: ',\\s*' } }, 'a, b,c')).toEqual(['a', 'b', 'c']);
    expect(chain({ tokenizer: 'keyword', filter: ['lowercase', { type: 'edge_ngram', min_gram: 1, max_gram: 3 }] }, 'Quick')).toEqual(['q', 'qu', 'qui']);
    expect(chain({ tokenizer: 'whitespace', char_filter: [{ type: 'mapping', mappings: ['ph => f'] }, { type: 'pattern_replace', pattern: '(\\d+)-(\\d+)', replacement: '$1_$2' }] }, 'phone 12-34')).toEqual(['fone', '12_34']);
    // snowball English is Porter2: generously → generous (Porter: gener)
    expect(run('snow', 'The generously running')).toEqual([['generous', 1], ['run', 2]]);
  });

  it('a chain equal to a built-in is that built-in; unknown parts are refused as Elasticsearch words it', () => {
    expect(resolveAnalyzer(ix, 'plain')).toBe('standard');
    expect(() => checkAnalysis({ 'index.analysis.analyzer.x.tokenizer': 'nope' })).toThrow('failed to find global tokenizer under [nope]');
    expect(() => checkAnalysis({ 'index.analysis.analyzer.x.tokenizer': 'standard', 'index.analysis.analyzer.x.filter': ['zzz'] })).toThrow('failed to find global filter under [zzz]');
    expect(() => checkAnalysis(settings)).not.toThrow();
    expect(() => checkAnalysis(settings, { properties: { t: { type: 'text', analyzer: 'folded' }, o: { properties: { u: { type: 'text', search_analyzer: 'english' } } } } })).not.toThrow();
    expect(() => checkAnalysis(settings, { properties: { o: { properties: { u: { type: 'text', analyzer: 'nope' } } } } })).toThrow('analyzer [nope] has not been configured in mappings');
  });
});

describe('auto_date_histogram', () => {
  const v = viewOf({ date: { type: 'date' }, v: { type: 'long' } }, [['2020-03-01', 1], ['2020-03-02', 2], ['2020-03-08', 3], ['2020-03-09', 4]].map(([date, n]) => ({ date, v: n })));
  type Histo = { buckets: Array<{ key_as_string: string; doc_count: number; v?: { value: number } }>; interval: string };

  it('takes the first rounding that fits, then merges consecutive buckets by an inner interval (7d)', () => {
    const r = runAggs({ h: { auto_date_histogram: { field: 'date', buckets: 2 }, aggs: { v: { sum: { field: 'v' } } } }, avg: { avg_bucket: { buckets_path: 'h.v' } } }, v.docs, ctx(v));
    const h = r.h as unknown as Histo;
    expect(h.interval).toBe('7d');
    expect(h.buckets.map((b) => [b.key_as_string, b.doc_count, b.v?.value])).toEqual([['2020-03-01T00:00:00.000Z', 2, 3], ['2020-03-08T00:00:00.000Z', 2, 7]]);
    expect(r.avg).toEqual({ value: 5 });
    // ten buckets by default: nine days, empty ones included
    const d = runAggs({ h: { auto_date_histogram: { field: 'date' } } }, v.docs, ctx(v)).h as unknown as Histo;
    expect([d.interval, d.buckets.length, d.buckets[2].doc_count]).toEqual(['1d', 9, 0]);
    expect((runAggs({ h: { auto_date_histogram: { field: 'date', buckets: 1, minimum_interval: 'month' } } }, v.docs, ctx(v)).h as unknown as Histo).interval).toBe('1M');
  });
});
