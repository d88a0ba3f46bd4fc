import { DbError } from '@mmdb/core';
import { IntentCache, type IntentBacking, type IntentEntry } from './cache';
import { NlCompiler, planReads } from './compiler';
import { lex } from './lex';
import { Lexicon } from './lexicon';
import { SchemaModel } from './schema';
import { FLEET, values } from './testing/fleet';

const NOW = new Date('2024-12-31T12:00:00Z');
const compiler = (cache = new IntentCache(100)) => new NlCompiler(() => FLEET, values, cache, undefined, () => NOW);
const lexicon = () => Lexicon.build(new SchemaModel(FLEET), values);
const bindParamsText = (r: { plan: unknown; params: unknown[] }) => JSON.stringify(r.plan).replace(/\bn\d+\b/g, 'n') + JSON.stringify(r.params);
const code = async (p: Promise<unknown>) => p.then(() => 'ok', (e: DbError) => e.code);

describe('lexing: items, slots and shapes', () => {
  it('values, numbers, dates and quoted text become slots; the rest is the shape', async () => {
    const lx = await lexicon();
    const a = lex('how many sailors are from Oslo?', lx, NOW);
    const b = lex('how many sailors are from Bergen?', lx, NOW);
    expect(a.shape).toBe(b.shape);
    expect(a.slots.slice(0, -1)).toEqual([['Oslo']]);
    expect(b.slots.slice(0, -1)).toEqual([['Bergen']]);
    expect(lex('sailors who joined in March 2023', lx, NOW).slots.slice(0, -1)).toEqual([['2023-03-01', '2023-04-01']]);
    expect(lex('sailors born before 1815', lx, NOW).slots.slice(0, -1)).toEqual([[1815, '1815-01-01', '1816-01-01']]);
    expect(lex('ships heavier than fifty tons', lx, NOW).slots.slice(0, -1)).toEqual([[50]]);
    expect(lex('between ten and twenty ships', lx, NOW).slots.slice(0, -1)).toEqual([[10], [20]]);
    expect(lex('a hundred and five ships or a dozen', lx, NOW).slots.slice(0, -1)).toEqual([[105], [12]]);
    expect(lex("ships whose log says 'mast'", lx, NOW).slots.slice(0, -1)).toEqual([['%mast%', { phrase: 'mast' }]]);
    expect(lex('sailors who joined last year', lx, NOW).slots.slice(0, -1)).toEqual([['2023-01-01', '2024-01-01']]);
    expect(lex('sailors who joined in the last 30 days', lx, NOW).slots.slice(0, -1)).toEqual([['2024-12-02', '2025-01-01']]);
    expect(lex('sailors who joined between June 1 and June 7, 2024', lx, NOW).slots.slice(0, -1)).toEqual([['2024-06-01', '2024-06-02'], ['2024-06-07', '2024-06-08']]);
  });
});

describe('compiling questions to plan templates', () => {
  it('a filter on a value is a parameter, and a question of the same shape is a cache hit', async () => {
    const c = compiler();
    const a = await c.ask('sailors from Oslo');
    expect(a.cache).toBe('miss');
    expect(a.params.slice(0, -2)).toEqual(['Oslo']);
    expect(JSON.stringify(a.plan)).toContain('"kind":"param"');
    expect([...planReads(a.plan)]).toEqual(['fleet.sailors']);
    const b = await c.ask('sailors from Bergen');
    expect(b).toMatchObject({ cache: 'hit' });
    expect(b.params.slice(0, -2)).toEqual(['Bergen']);
    expect(b.plan).toEqual(a.plan);
    expect(c.cache.hits).toBe(1);
  });

  it('counts, comparisons, superlatives and grouping', async () => {
    const c = compiler();
    expect((await c.ask('how many ships are there?')).plan).toMatchObject({ op: 'aggregate', aggregates: [{ fn: 'count', star: true }] });
    expect(JSON.stringify((await c.ask('sailors born after 1955')).plan)).toMatch(/"op":">".*born_year|born_year.*"op":">"/);
    const top = (await c.ask('the heaviest ship')).plan;
    expect(JSON.stringify(top)).toContain('"desc":true');
    expect(JSON.stringify(top)).toContain('tonnage');
    expect(JSON.stringify((await c.ask('how many sailors per home port')).plan)).toContain('"group":[{"name":"group"');
  });

  it('sorted by is an order, "or" joins literals, "whose X contains" searches that column', async () => {
    const c = compiler();
    const sorted = await c.ask('sailors sorted by born year descending');
    expect(sorted.plan).toMatchObject({ op: 'project', input: { op: 'sort', keys: [{ desc: true }] } });
    const either = JSON.stringify((await c.ask('sailors born in 1950 or 1962')).plan);
    expect(either).toContain('"op":"or"');
    const has = await c.ask("sailors whose home port contains 'slo'");
    expect(JSON.stringify(has.plan)).toMatch(/"kind":"like","arg":\{"kind":"col","name":"n\d\.home_port"/);
    expect(has.params.slice(0, -2)).toEqual(['%slo%', { phrase: 'slo' }]);
    expect(has.interpretation).toContain('"slo"');
  });

  it('searched text on a [[fulltext]] field is an fts_search with the words as a slot: the next ask of the shape is a cache hit', async () => {
    const c = compiler();
    const a = await c.ask("ships whose log mentions 'broken mast'");
    const plan = JSON.stringify(a.plan);
    expect(plan).toMatch(/"kind":"in_subquery","arg":\{"kind":"col","name":"n\d\.\w+"[^}]*\},"plan":\{"op":"project","input":\{"op":"fts_search","schema":"[\w.]+","field":"log","query":\{"kind":"param","index":2\},"limit":null/);
    expect(plan).not.toContain('"kind":"like"');
    expect(a.params.slice(0, 2)).toEqual(['%broken mast%', { phrase: 'broken mast' }]);
    const b = await c.ask("ships whose log mentions 'storm damage'");
    expect(b.cache).toBe('hit');
    expect(b.plan).toEqual(a.plan);
    expect(b.params.slice(0, 2)).toEqual(['%storm damage%', { phrase: 'storm damage' }]);
  });

  it('either of two values, the first by a verb\'s column, the age at death', async () => {
    const c = compiler();
    const span = JSON.stringify((await c.ask('sailors born from 1950 to 1960')).plan);
    expect(span).toMatch(/"op":">=".*born_year.*"op":"<=".*born_year|born_year.*"op":">=".*born_year.*"op":"<="/);
    const either = await c.ask('sailors from Oslo or Bergen');
    expect(either.params.slice(0, -2)).toEqual(['Oslo', 'Bergen']);
    expect(JSON.stringify(either.plan)).toContain('"op":"or"');
    const first = await c.ask('which sailor joined first?');
    expect(first.plan).toMatchObject({ op: 'limit', input: { op: 'project', columns: [{ name: 'name' }], input: { op: 'sort', keys: [{ expr: { name: 'n0.joined_on' } }] } } });
    // an age from the clock: the year is a parameter of every ask, so a cached template stays right next year
    const now = await c.ask('sailors older than 60');
    expect(JSON.stringify(now.plan)).toMatch(/"op":">","left":\{"kind":"binary","op":"-","left":\{"kind":"param","index":2\},"right":\{"kind":"col","name":"n0.born_year"/);
    expect(now.params).toEqual([60, 2024, '2024-12-31']);
    const age = JSON.stringify((await c.ask('sailors older than 70 when they died')).plan);
    expect(age).toMatch(/"op":">","left":\{"kind":"binary","op":"-","left":\{"kind":"col","name":"n0.died_in"/);
  });

  it('groups ranked by an aggregate, "three X with the most Y", and the date of event rows', async () => {
    const c = compiler();
    const ranked = await c.ask('which home port has the highest average born year?');
    expect(ranked.plan).toMatchObject({ op: 'project', columns: [{ name: 'home_port' }], input: { op: 'limit', input: { op: 'sort', keys: [{ desc: true }], input: { op: 'aggregate', aggregates: [{ fn: 'avg' }] } } } });
    const three = await c.ask('which two sailors command the most ships?');
    expect(three.params.slice(0, -2)).toEqual([2]);
    expect(JSON.stringify(three.plan)).toContain('"fn":"count"');
    // crossings have no display column: "in 2020" is their own date, not a year of a joined table
    const dated = JSON.stringify((await c.ask('how many crossings per ship in 2020')).plan);
    expect(dated).toContain('sailed_on');
  });

  it('question words pick the attribute: when (a verb\'s column), how many <numeric column>', async () => {
    const c = compiler();
    const when = await c.ask('When did Bo Lund join?');
    expect(when.plan).toMatchObject({ op: 'project', columns: [{ name: 'joined_on' }] });
    const born = await c.ask('When was Ada Byrne born?');
    expect(born.plan).toMatchObject({ op: 'project', columns: [{ name: 'born_year' }] });
    const tons = await c.ask('How much tonnage does Sea Hawk have?');
    expect(tons.plan).toMatchObject({ op: 'project', columns: [{ name: 'tonnage' }] });
    // a word of the column's description names it
    const disp = await c.ask('what is the displacement of Sea Hawk?');
    expect(disp.plan).toMatchObject({ op: 'project', columns: [{ name: 'tonnage' }] });
  });

  it('each X with its number of Y, groups filtered by an aggregate, the most common value, grouped sorted by', async () => {
    const c = compiler();
    const each = JSON.stringify((await c.ask('each sailor with the number of ships they command')).plan);
    expect(each).toContain('"fn":"any_value"');
    expect(each).toContain('"fn":"count"');
    const having = await c.ask('home ports with an average born year above 1955');
    expect(having.plan).toMatchObject({ op: 'project', columns: [{ name: 'home_port' }], input: { op: 'filter', predicate: { op: '>', left: { name: 'having' } } } });
    const common = await c.ask('the most common home port');
    expect(common.plan).toMatchObject({ op: 'project', columns: [{ name: 'home_port' }], input: { op: 'limit' } });
    const sorted = await c.ask('average tonnage per captain sorted by tonnage descending');
    expect(JSON.stringify(sorted.plan)).toContain('"keys":[{"expr":{"kind":"col","name":"value"},"desc":true}]');
  });

  it('"which X has the highest Y" and "the X with the most Y" answer the entity; "the highest Y" the value', async () => {
    const c = compiler();
    const which = await c.ask('which ship has the highest tonnage?');
    expect(which.plan).toMatchObject({ op: 'limit', input: { op: 'project', columns: [{ name: 'name' }], input: { op: 'sort', keys: [{ desc: true }] } } });
    const most = await c.ask('the sailor with the lowest born year');
    expect(most.plan).toMatchObject({ op: 'limit', input: { op: 'project', columns: [{ name: 'name' }], input: { op: 'sort', keys: [{ desc: false }] } } });
    const value = await c.ask('what is the highest tonnage?');
    expect(value.plan).toMatchObject({ op: 'aggregate', aggregates: [{ fn: 'max' }] });
  });

  it('a part of exactly one name finds it; a part of several is an error naming them', async () => {
    const c = compiler();
    expect((await c.ask('ships captained by Byrne')).params.slice(0, -2)).toEqual(['Ada Byrne']);
    expect((await c.ask('ships named Hawk')).params.slice(0, -2)).toEqual(['Sea Hawk']);
    // rows of a table with no display column come with their own columns
    const edges = await c.ask('all crossings of Sea Hawk');
    expect(edges.plan).toMatchObject({ op: 'project', columns: [{ name: 'id' }, { name: 'ship_id' }, { name: 'sailed_on' }, { name: 'due_on' }, { name: 'arrived_on' }] });
    // "arrived late": that date after the row's due date
    expect(JSON.stringify((await c.ask('how many crossings arrived late?')).plan)).toContain('{"kind":"binary","op":">","left":{"kind":"col","name":"n0.arrived_on","affinity":"text"},"right":{"kind":"col","name":"n0.due_on","affinity":"text"}}');
  });

  it('a hop along a relation has an interpretation naming the relation and its direction', async () => {
    const r = await compiler().ask('who does Ada Byrne mentor?');
    expect(r.interpretation).toMatch(/mentors/);
    expect(r.interpretation).toContain('Ada Byrne');
    expect([...planReads(r.plan)].sort()).toEqual(['fleet.mentoring', 'fleet.sailors']);
    // one hop through the edge table is one graph_expand of depth 1 (no join through fleet.mentoring)
    const text = JSON.stringify(r.plan);
    expect(text).toContain('"op":"graph_expand"');
    expect(text).toContain('"rel":"mentors"');
    expect(text).toContain('"min_depth":1,"max_depth":1');
    expect(text).not.toContain('"op":"join"');
  });

  it('"directly or indirectly" walks a self-relation to any depth (a transitive graph_expand)', async () => {
    const r = await compiler().ask('who does Ada Byrne mentor directly or indirectly?');
    const text = JSON.stringify(r.plan);
    expect(text).toContain('"op":"graph_expand"');
    expect(text).toContain('"rel":"mentors","from":{"kind":"col","name":"n0.id","affinity":"integer"},"direction":"forward","min_depth":1,"max_depth":null');
    expect(text).not.toContain('"recursive":true');
    expect(r.interpretation).toContain('at any depth');
  });

  it("a possessive names the start of a relation noun (\"Ada Byrne's mentees\")", async () => {
    const c = compiler();
    const a = await c.ask("Bo Lund's mentors");
    const b = await c.ask('mentors of Bo Lund');
    expect(a.params.slice(0, -2)).toEqual(['Bo Lund']);
    expect(bindParamsText(a)).toEqual(bindParamsText(b));
  });

  it('"how many times" counts the edge rows of a hop', async () => {
    const c = compiler();
    const times = await c.ask('how many times did Ada Byrne mentor someone?');
    const text = JSON.stringify(times.plan);
    expect(times.plan).toMatchObject({ op: 'aggregate', aggregates: [{ fn: 'count', star: true }] });
    // the rows counted are the edge table's: it is the plan's first scan, the sailors are joined to it
    expect(text.indexOf('fleet.mentoring')).toBeLessThan(text.indexOf('fleet.sailors'));
    expect(text).not.toContain('in_subquery');
  });

  it('object relatives with and without "that" read alike', async () => {
    const c = compiler();
    const a = await c.ask('ships that Ada Byrne commands');
    const b = await c.ask('ships Ada Byrne commands');
    expect(bindParamsText(a)).toEqual(bindParamsText(b));
    // the relation declared by the ships' key column is walked in the graph engine, in reverse
    expect(JSON.stringify(a.plan)).toContain('"schema":"fleet.ships","rel":"captained_by","from":{"kind":"col","name":"n1.id","affinity":"integer"},"direction":"reverse"');
  });

  it('a self-relation named without a direction is ambiguous_graph_direction, naming both readings', async () => {
    const c = compiler();
    const err = await c.ask('mentors connections of Bo Lund').catch((e: DbError) => e);
    expect(err).toBeInstanceOf(DbError);
    expect((err as DbError).code).toBe('ambiguous_graph_direction');
    expect((err as DbError).details).toMatchObject({ relation: 'mentors', direction: { forward: expect.stringContaining('they mentor'), reverse: expect.stringContaining('their mentors') } });
    // it overrides the direction a verb gave a self-relation hop, too
    const verb = await c.ask('who mentors Bo Lund?');
    expect((await c.ask('who mentors Bo Lund?', { direction: 'forward' })).plan).toEqual(verb.plan);
    expect((await c.ask('who mentors Bo Lund?', { direction: 'reverse' })).plan).not.toEqual(verb.plan);
    const f = await c.ask('mentors connections of Bo Lund', { direction: 'forward' });
    const r = await c.ask('mentors connections of Bo Lund', { direction: 'reverse' });
    expect(f.plan).not.toEqual(r.plan);
  });

  it('unknown words are validation_failed with the closest names; unknown schemas are schema_not_found', async () => {
    const c = compiler();
    const err = (await c.ask('how many sailers are on dekc?').catch((e: DbError) => e)) as DbError;
    expect(err.code).toBe('validation_failed');
    expect(err.details.suggestions).toContain('sailors');
    expect(await code(c.ask('how many ships?', { schemas: ['fleet.nope'] }))).toBe('schema_not_found');
    // a table outside `schemas` cannot be placed
    const hidden = (await c.ask('ships captained by Ada Byrne', { schemas: ['fleet.ships'] }).catch((e: DbError) => e)) as DbError;
    expect(hidden.code).toBe('validation_failed');
    expect(hidden.message).toContain('fleet.sailors');
    expect(await code(c.ask('   '))).toBe('validation_failed');
    // a condition on something the store does not hold is refused, not dropped
    const cond = (await c.ask('sailors with expired licences').catch((e: DbError) => e)) as DbError;
    expect(cond.code).toBe('validation_failed');
    expect(cond.details.not_understood).toContain('licences');
  });
});

describe('the intent cache', () => {
  const entry = (key: string, reads: Record<string, string> = {}): IntentEntry => ({ key, reads, source: 'grammar', at: Date.now(), plan: { op: 'scan', schema: 'a.b' } });

  it('is LRU-bounded and tells its backing which entries it dropped', async () => {
    const saved: Array<[string | null, readonly string[]]> = [];
    const backing: IntentBacking = { load: async () => [], save: async (p, d) => void saved.push([p?.key ?? null, d]) };
    const c = new IntentCache(2, backing);
    await c.put(entry('a'));
    await c.put(entry('b'));
    c.get('a', () => undefined);
    await c.put(entry('c'));
    expect(c.size).toBe(2);
    expect(saved[2]).toEqual(['c', ['b']]);
  });

  it('drops an entry whose schema changed, and every entry that read a dropped schema', async () => {
    const c = new IntentCache(10);
    await c.put(entry('x', { 'a.b': 'f1' }));
    await c.put(entry('y', { 'a.c': 'f1' }));
    expect(c.get('x', () => 'f2')).toBeUndefined();
    expect(c.get('y', () => 'f1')).toBeDefined();
    await c.dropSchema('a.c');
    expect(c.get('y', () => 'f1')).toBeUndefined();
  });

  it('loads entries from its backing, oldest first, keeping the newest within capacity', async () => {
    const dropped: string[] = [];
    const c = new IntentCache(1, { load: async () => [{ ...entry('old'), at: 1 }, { ...entry('new'), at: 2 }], save: async (_p, d) => void dropped.push(...d) });
    await c.load();
    expect(c.get('new', () => undefined)).toBeDefined();
    expect(dropped).toEqual(['old']);
  });
});

describe('relation phrases', () => {
  it('read verbs, gerunds, nouns and preposition names; pronouns are never nouns', () => {
    const m = new SchemaModel([
      ...FLEET,
      { ...FLEET[0], table: 'officers', id: 'fleet.officers', label: 'name', relations: [
        { name: 'reports_to', source: 'fleet.officers', target: 'fleet.officers', columns: ['born_year'], forward: 'officer -> their superior', reverse: 'officer -> officers reporting to them' },
      ] },
    ]);
    const r = m.relations.find((x) => x.name === 'reports_to')!;
    expect(r.verbs).toEqual([{ lemma: 'report', subject: 'source' }]);
    expect(r.nouns.map((n) => n.word)).toEqual(expect.arrayContaining(['superior', 'officer', 'reporter']));
    expect(r.nouns.map((n) => n.word)).not.toContain('them');
    const enrolled = new SchemaModel([
      { ...FLEET[0], table: 'crews', id: 'fleet.crews', label: 'name', relations: [
        { name: 'serves_on', source: 'fleet.crews', target: 'fleet.sailors', columns: ['born_year'], forward: 'crew -> sailors they are assigned to', reverse: 'sailor -> crews who have served them' },
      ] },
      FLEET[0],
    ]).relations[0];
    expect(enrolled.verbs.map((v) => v.lemma)).toEqual(expect.arrayContaining(['assign', 'serve']));
    const mentors = m.relations.find((x) => x.name === 'mentors')!;
    expect(mentors.verbs).toEqual([{ lemma: 'mentor', subject: 'source' }]);
    expect(mentors.nouns).toEqual(expect.arrayContaining([{ word: 'mentor', dir: 'reverse' }]));
  });
});

describe('the lexicon after writes', () => {
  it('rebuilds in the background when asked to (the next ask answers from the old one), or at once', async () => {
    const rows = [{ name: 'Ada Byrne' }];
    let builds = 0;
    const src = async (_t: string, cols: readonly string[]) => (builds++, new Map(cols.map((c) => [c, c === 'name' ? rows.map((r) => r.name) : []])));
    const c = new NlCompiler(() => FLEET, src, new IntentCache(10), undefined, () => NOW);
    await c.ask('sailors named Ada Byrne');
    const first = builds;
    rows.push({ name: 'Cy Moss' });
    c.invalidate(true);
    expect(await code(c.ask('sailors named Cy Moss'))).toBe('validation_failed'); // still the old names
    await new Promise((r) => setTimeout(r, 50));
    expect(builds).toBeGreaterThan(first);
    expect((await c.ask('sailors named Cy Moss')).params.slice(0, -2)).toEqual(['Cy Moss']);
    rows.push({ name: 'Di Kerr' });
    c.invalidate();
    expect((await c.ask('sailors named Di Kerr')).params.slice(0, -2)).toEqual(['Di Kerr']);
  });
});
