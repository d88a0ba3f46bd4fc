/**
 * A held-out domain for POST /ask, none of whose words the compiler was tuned on: a zoo
 * (keepers, animals, enclosures, feedings, a training self-relation, observations). The rows
 * are generated from a seed, loaded through our routes and into SQLite (better-sqlite3); each
 * question's gold SQL runs on SQLite and its rows are compared with /ask's as multisets (in
 * order for ordered questions). The target for a held-out domain is ≥ 80%.
 */
import Database from 'better-sqlite3';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

const M = {
  keepers: `namespace = "zoo"\ntable = "keepers"\nprimary_key = ["id"]\nlabel = "full_name"
[[columns]]\nname = "id"\nty = "i64"\nrequired = true
[[columns]]\nname = "full_name"\nty = "str"\nrequired = true
[[columns]]\nname = "shift"\nty = "str"\nrequired = true
[[columns]]\nname = "hired"\nty = "str"\nrequired = true
[[columns]]\nname = "supervisor_id"\nty = "i64"
[[relations]]\nname = "reports_to"\ntarget = "zoo.keepers"\ncolumns = ["supervisor_id"]\nforward = "keeper -> their supervisor"\nreverse = "keeper -> keepers reporting to them"
`,
  enclosures: `namespace = "zoo"\ntable = "enclosures"\nprimary_key = ["id"]\nlabel = "name"
[[columns]]\nname = "id"\nty = "i64"\nrequired = true
[[columns]]\nname = "name"\nty = "str"\nrequired = true
[[columns]]\nname = "zone"\nty = "str"\nrequired = true
[[columns]]\nname = "capacity"\nty = "i64"\nrequired = true
[[columns]]\nname = "built_year"\nty = "i64"\nrequired = true
`,
  animals: `namespace = "zoo"\ntable = "animals"\nprimary_key = ["id"]\nlabel = "nickname"
[[columns]]\nname = "id"\nty = "i64"\nrequired = true
[[columns]]\nname = "nickname"\nty = "str"\nrequired = true
[[columns]]\nname = "species"\nty = "str"\nrequired = true
[[columns]]\nname = "weight_kg"\nty = "f64"\nrequired = true
[[columns]]\nname = "arrived"\nty = "str"\nrequired = true
[[columns]]\nname = "keeper_id"\nty = "i64"\nrequired = true
[[columns]]\nname = "enclosure_id"\nty = "i64"\nrequired = true
[[foreign_keys]]\ncolumns = ["keeper_id"]\nreferences = "zoo.keepers"
[[foreign_keys]]\ncolumns = ["enclosure_id"]\nreferences = "zoo.enclosures"
[[relations]]\nname = "cared_for_by"\ntarget = "zoo.keepers"\ncolumns = ["keeper_id"]\nforward = "animal -> its keeper"\nreverse = "keeper -> animals they care for"
`,
  feedings: `namespace = "zoo"\ntable = "feedings"\nprimary_key = ["id"]
[[columns]]\nname = "id"\nty = "i64"\nrequired = true
[[columns]]\nname = "animal_id"\nty = "i64"\nrequired = true
[[columns]]\nname = "keeper_id"\nty = "i64"\nrequired = true
[[columns]]\nname = "fed_on"\nty = "str"\nrequired = true
[[columns]]\nname = "grams"\nty = "i64"\nrequired = true
[[foreign_keys]]\ncolumns = ["animal_id"]\nreferences = "zoo.animals"
[[foreign_keys]]\ncolumns = ["keeper_id"]\nreferences = "zoo.keepers"
[[relations]]\nname = "fed"\nsource = "zoo.keepers"\nsource_columns = ["keeper_id"]\ntarget = "zoo.animals"\ncolumns = ["animal_id"]\nforward = "keeper -> animals they fed"\nreverse = "animal -> keepers who fed it"
`,
  trainings: `namespace = "zoo"\ntable = "trainings"\nprimary_key = ["trainer_id", "trainee_id"]
[[columns]]\nname = "trainer_id"\nty = "i64"\nrequired = true
[[columns]]\nname = "trainee_id"\nty = "i64"\nrequired = true
[[foreign_keys]]\ncolumns = ["trainer_id"]\nreferences = "zoo.keepers"
[[foreign_keys]]\ncolumns = ["trainee_id"]\nreferences = "zoo.keepers"
[[relations]]\nname = "trains"\nsource = "zoo.keepers"\nsource_columns = ["trainer_id"]\ntarget = "zoo.keepers"\ncolumns = ["trainee_id"]\nforward = "keeper -> keepers they train"\nreverse = "keeper -> their trainers"
`,
  observations: `namespace = "zoo"\ntable = "observations"\nprimary_key = ["id"]
[[columns]]\nname = "id"\nty = "i64"\nrequired = true
[[columns]]\nname = "animal_id"\nty = "i64"\nrequired = true
[[columns]]\nname = "note"\nty = "str"\nrequired = true
[[columns]]\nname = "mood"\nty = "i64"\nrequired = true
[[columns]]\nname = "noted_on"\nty = "str"\nrequired = true
[[foreign_keys]]\ncolumns = ["animal_id"]\nreferences = "zoo.animals"
[[fulltext]]\nfield = "note"
`,
};
const ORDER = ['keepers', 'enclosures', 'animals', 'feedings', 'trainings', 'observations'] as const;

function generate(): Record<string, Array<Record<string, unknown>>> {
  let s = 12345;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
  const date = (y0: number, y1: number) => `${y0 + Math.floor(rnd() * (y1 - y0 + 1))}-${String(1 + Math.floor(rnd() * 12)).padStart(2, '0')}-${String(1 + Math.floor(rnd() * 28)).padStart(2, '0')}`;
  const first = ['Mira', 'Tomas', 'Ines', 'Kofi', 'Lena', 'Ravi', 'Uma', 'Pavel', 'Zara', 'Otto', 'Nia', 'Hugo'];
  const last = ['Okoro', 'Varga', 'Lindholm', 'Achebe', 'Moreau', 'Tanaka', 'Silva', 'Novak'];
  const keepers = Array.from({ length: 20 }, (_, i) => ({
    id: i + 1, full_name: `${first[i % 12]} ${last[(i * 5) % 8]}`, shift: pick(['Morning', 'Evening', 'Night']), hired: date(2005, 2023),
    ...(i > 0 ? { supervisor_id: 1 + Math.floor(i / 3) } : {}),
  }));
  const enclosures = ['Lion Rock', 'Penguin Cove', 'Monkey Grove', 'Reptile House', 'Savanna Plain', 'Bird Dome'].map((name, i) => ({ id: i + 1, name, zone: pick(['North', 'South', 'East']), capacity: 5 + Math.floor(rnd() * 40), built_year: 1960 + Math.floor(rnd() * 60) }));
  const species = ['Lion', 'Penguin', 'Macaque', 'Python', 'Zebra', 'Flamingo', 'Giraffe'];
  const names = ['Bubbles', 'Shadow', 'Pepper', 'Ziggy', 'Mango', 'Biscuit', 'Nimbus', 'Tango', 'Maple', 'Comet'];
  const animals = Array.from({ length: 60 }, (_, i) => ({
    id: i + 1, nickname: `${names[i % 10]} ${['the First', 'the Bold', 'Junior', 'the Quiet', 'Senior', 'the Swift'][Math.floor(i / 10)]}`, species: species[i % 7],
    weight_kg: Math.round(rnd() * 60000) / 100, arrived: date(2010, 2024), keeper_id: 1 + Math.floor(rnd() * 18), enclosure_id: 1 + (i % 6),
  }));
  const feedings = Array.from({ length: 300 }, (_, i) => ({ id: i + 1, animal_id: 1 + Math.floor(rnd() * 60), keeper_id: 1 + Math.floor(rnd() * 16), fed_on: date(2022, 2024), grams: 100 + Math.floor(rnd() * 5000) }));
  const pairs = new Set<string>();
  const trainings: Array<Record<string, unknown>> = [];
  while (trainings.length < 25) {
    const a = 1 + Math.floor(rnd() * 20);
    const b = 1 + Math.floor(rnd() * 20);
    if (a === b || pairs.has(`${a}:${b}`)) continue;
    pairs.add(`${a}:${b}`);
    trainings.push({ trainer_id: a, trainee_id: b });
  }
  const notes = ['Limping slightly on the left leg.', 'Good appetite today.', 'Restless during the storm.', 'Playful with visitors.', 'Refused food in the morning.', 'Sleeping more than usual.'];
  const observations = Array.from({ length: 150 }, (_, i) => ({ id: i + 1, animal_id: 1 + Math.floor(rnd() * 60), note: pick(notes), mood: 1 + Math.floor(rnd() * 5), noted_on: date(2023, 2024) }));
  return { keepers, enclosures, animals, feedings, trainings, observations };
}

interface Q { nl: string; sql: string; ordered?: boolean; direction?: 'forward' | 'reverse' }
const QUESTIONS: Q[] = [
  { nl: 'What species is Mango the Bold?', sql: "SELECT species FROM animals WHERE nickname = 'Mango the Bold'" },
  { nl: 'which zone is Penguin Cove in?', sql: "SELECT zone FROM enclosures WHERE name = 'Penguin Cove'" },
  { nl: 'how many animals are there?', sql: 'SELECT COUNT(*) FROM animals' },
  { nl: 'how many keepers work the night shift?', sql: "SELECT COUNT(*) FROM keepers WHERE shift = 'Night'" },
  { nl: 'how many animals weigh more than 400 kg?', sql: 'SELECT COUNT(*) FROM animals WHERE weight_kg > 400' },
  { nl: 'animals that arrived before 2012', sql: "SELECT nickname FROM animals WHERE arrived < '2012-01-01'" },
  { nl: 'enclosures built after 1990', sql: 'SELECT name FROM enclosures WHERE built_year > 1990' },
  { nl: 'the heaviest animal', sql: 'SELECT nickname FROM animals ORDER BY weight_kg DESC LIMIT 1' },
  { nl: 'the 3 largest enclosures', sql: 'SELECT name FROM enclosures ORDER BY capacity DESC LIMIT 3', ordered: true },
  { nl: 'average weight of the giraffes', sql: "SELECT AVG(weight_kg) FROM animals WHERE species = 'Giraffe'" },
  { nl: 'how many animals per species', sql: 'SELECT species, COUNT(*) FROM animals GROUP BY species' },
  { nl: 'total grams fed per keeper', sql: 'SELECT k.full_name, SUM(f.grams) FROM feedings f JOIN keepers k ON k.id = f.keeper_id GROUP BY k.id' },
  { nl: 'animals in Reptile House', sql: "SELECT a.nickname FROM animals a JOIN enclosures e ON e.id = a.enclosure_id WHERE e.name = 'Reptile House'" },
  { nl: 'animals cared for by Lena Moreau', sql: "SELECT a.nickname FROM animals a JOIN keepers k ON k.id = a.keeper_id WHERE k.full_name = 'Lena Moreau'" },
  { nl: 'who feeds Tango Junior?', sql: "SELECT DISTINCT k.full_name FROM feedings f JOIN keepers k ON k.id = f.keeper_id JOIN animals a ON a.id = f.animal_id WHERE a.nickname = 'Tango Junior'" },
  { nl: 'which animals did Ravi Varga feed in 2023?', sql: "SELECT DISTINCT a.nickname FROM feedings f JOIN keepers k ON k.id = f.keeper_id JOIN animals a ON a.id = f.animal_id WHERE k.full_name = 'Ravi Varga' AND f.fed_on >= '2023-01-01' AND f.fed_on < '2024-01-01'" },
  { nl: 'who does Mira Okoro train?', sql: "SELECT t.full_name FROM trainings x JOIN keepers m ON m.id = x.trainer_id JOIN keepers t ON t.id = x.trainee_id WHERE m.full_name = 'Mira Okoro'" },
  { nl: 'who trains Uma Silva?', sql: "SELECT t.full_name FROM trainings x JOIN keepers m ON m.id = x.trainee_id JOIN keepers t ON t.id = x.trainer_id WHERE m.full_name = 'Uma Silva'" },
  { nl: 'trainers of Nia Lindholm', sql: "SELECT t.full_name FROM trainings x JOIN keepers m ON m.id = x.trainee_id JOIN keepers t ON t.id = x.trainer_id WHERE m.full_name = 'Nia Lindholm'" },
  { nl: 'trains connections of Otto Tanaka', sql: "SELECT t.full_name FROM trainings x JOIN keepers m ON m.id = x.trainee_id JOIN keepers t ON t.id = x.trainer_id WHERE m.full_name = 'Otto Tanaka'", direction: 'reverse' },
  { nl: 'keepers who never fed an animal', sql: 'SELECT full_name FROM keepers k WHERE NOT EXISTS (SELECT 1 FROM feedings f WHERE f.keeper_id = k.id)' },
  { nl: 'keepers with no animals', sql: 'SELECT full_name FROM keepers k WHERE NOT EXISTS (SELECT 1 FROM animals a WHERE a.keeper_id = k.id)' },
  { nl: 'how many feedings were made in March 2024?', sql: "SELECT COUNT(*) FROM feedings WHERE fed_on >= '2024-03-01' AND fed_on < '2024-04-01'" },
  { nl: 'keepers hired before 2010', sql: "SELECT full_name FROM keepers WHERE hired < '2010-01-01'" },
  { nl: 'how many observations mention appetite?', sql: "SELECT COUNT(*) FROM observations WHERE note LIKE '%appetite%'" },
  { nl: 'animals with an observation that mentions limping', sql: "SELECT DISTINCT a.nickname FROM observations o JOIN animals a ON a.id = o.animal_id WHERE o.note LIKE '%limping%'" },
  { nl: 'which keeper has fed the most animals?', sql: 'SELECT k.full_name FROM feedings f JOIN keepers k ON k.id = f.keeper_id GROUP BY k.id ORDER BY COUNT(DISTINCT f.animal_id) DESC LIMIT 1' },
  { nl: 'species with more than 8 animals', sql: 'SELECT species FROM animals GROUP BY species HAVING COUNT(*) > 8' },
  { nl: 'how many penguins arrived after 2018?', sql: "SELECT COUNT(*) FROM animals WHERE species = 'Penguin' AND arrived >= '2019-01-01'" },
  {
    nl: 'who does Mira Okoro train directly or indirectly?',
    sql: "WITH RECURSIVE r(k) AS (SELECT trainee_id FROM trainings WHERE trainer_id = (SELECT id FROM keepers WHERE full_name = 'Mira Okoro') UNION SELECT t.trainee_id FROM trainings t JOIN r ON t.trainer_id = r.k) SELECT full_name FROM keepers WHERE id IN (SELECT k FROM r)",
  },
  { nl: 'What is the capacity of Bird Dome?', sql: "SELECT capacity FROM enclosures WHERE name = 'Bird Dome'" },
  { nl: 'Who cares for Shadow the First?', sql: "SELECT k.full_name FROM animals a JOIN keepers k ON k.id = a.keeper_id WHERE a.nickname = 'Shadow the First'" },
  { nl: 'how many animals does Lena Moreau care for?', sql: "SELECT COUNT(*) FROM animals a JOIN keepers k ON k.id = a.keeper_id WHERE k.full_name = 'Lena Moreau'" },
  { nl: 'number of animals in each zone', sql: 'SELECT e.zone, COUNT(*) FROM animals a JOIN enclosures e ON e.id = a.enclosure_id GROUP BY e.zone' },
  { nl: 'the lightest python', sql: "SELECT nickname FROM animals WHERE species = 'Python' ORDER BY weight_kg LIMIT 1" },
  { nl: 'animals weighing between 100 and 200 kg', sql: 'SELECT nickname FROM animals WHERE weight_kg BETWEEN 100 AND 200' },
  { nl: 'average mood of observations in 2024', sql: "SELECT AVG(mood) FROM observations WHERE noted_on >= '2024-01-01' AND noted_on < '2025-01-01'" },
  { nl: 'keepers on the evening shift hired after 2015', sql: "SELECT full_name FROM keepers WHERE shift = 'Evening' AND hired >= '2016-01-01'" },
  { nl: 'how many feedings did Kofi Novak do in 2023?', sql: "SELECT COUNT(*) FROM feedings f JOIN keepers k ON k.id = f.keeper_id WHERE k.full_name = 'Kofi Novak' AND f.fed_on >= '2023-01-01' AND f.fed_on < '2024-01-01'" },
  { nl: 'observations with a mood below 2', sql: 'SELECT note FROM observations WHERE mood < 2' },
  { nl: 'keepers trained by Mira Okoro', sql: "SELECT t.full_name FROM trainings x JOIN keepers m ON m.id = x.trainer_id JOIN keepers t ON t.id = x.trainee_id WHERE m.full_name = 'Mira Okoro'" },
  { nl: 'enclosures in the north zone', sql: "SELECT name FROM enclosures WHERE zone = 'North'" },
  { nl: 'total capacity of enclosures in the south zone', sql: "SELECT SUM(capacity) FROM enclosures WHERE zone = 'South'" },
  { nl: 'animals heavier than 300 kg in Savanna Plain', sql: "SELECT a.nickname FROM animals a JOIN enclosures e ON e.id = a.enclosure_id WHERE a.weight_kg > 300 AND e.name = 'Savanna Plain'" },
  { nl: 'animals that were never observed', sql: 'SELECT nickname FROM animals a WHERE NOT EXISTS (SELECT 1 FROM observations o WHERE o.animal_id = a.id)' },
  { nl: 'how many animals has nobody observed?', sql: 'SELECT COUNT(*) FROM animals a WHERE NOT EXISTS (SELECT 1 FROM observations o WHERE o.animal_id = a.id)' },
  { nl: 'who does Ines Silva report to?', sql: "SELECT s.full_name FROM keepers k JOIN keepers s ON s.id = k.supervisor_id WHERE k.full_name = 'Ines Silva'" },
  { nl: 'who reports to Tomas Tanaka?', sql: "SELECT k.full_name FROM keepers k JOIN keepers s ON s.id = k.supervisor_id WHERE s.full_name = 'Tomas Tanaka'" },
  { nl: 'the supervisor of Uma Lindholm', sql: "SELECT s.full_name FROM keepers k JOIN keepers s ON s.id = k.supervisor_id WHERE k.full_name = 'Uma Lindholm'" },
  {
    nl: 'how many keepers report to Mira Okoro directly or indirectly?',
    sql: "WITH RECURSIVE r(k) AS (SELECT id FROM keepers WHERE supervisor_id = (SELECT id FROM keepers WHERE full_name = 'Mira Okoro') UNION SELECT c.id FROM keepers c JOIN r ON c.supervisor_id = r.k) SELECT COUNT(*) FROM r",
  },
  { nl: 'keepers with more than a dozen feedings', sql: 'SELECT k.full_name FROM keepers k JOIN feedings f ON f.keeper_id = k.id GROUP BY k.id HAVING COUNT(*) > 12' },
  { nl: 'animals weighing between fifty and two hundred kg', sql: 'SELECT nickname FROM animals WHERE weight_kg BETWEEN 50 AND 200' },
  { nl: 'list the enclosures from oldest to newest', sql: 'SELECT name FROM enclosures ORDER BY built_year', ordered: true },
];

const norm = (row: Record<string, unknown> | unknown[]) =>
  JSON.stringify(Object.values(row).map((v) => (typeof v === 'number' || typeof v === 'boolean' ? Number(Number(v).toFixed(4)) : v)).sort((a, b) => String(a).localeCompare(String(b))));

describe('POST /ask on a held-out domain (SQLite gold)', () => {
  let srv: TestServer;
  const db = new Database(':memory:');
  const data = generate();

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    for (const t of ORDER) {
      expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: M[t], contentType: 'text/plain' })).status).toBe(200);
      expect((await srv.request('POST', `${T}/rows/zoo.${t}/_batch`, { token: TOKEN, body: data[t] })).status).toBe(200);
      const cols = [...new Set(data[t].flatMap((r) => Object.keys(r)))];
      db.exec(`CREATE TABLE ${t} (${cols.join(', ')})`);
      const ins = db.prepare(`INSERT INTO ${t} VALUES (${cols.map(() => '?').join(', ')})`);
      for (const r of data[t]) ins.run(...cols.map((c) => (r[c] ?? null) as never));
    }
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
    db.close();
  });

  it('answers at least 80% of the questions right', async () => {
    const wrong: string[] = [];
    for (const q of QUESTIONS) {
      const gold = (db.prepare(q.sql).raw(true).all() as unknown[][]).map(norm);
      if (!gold.length) throw new Error(`gold is empty: ${q.sql}`);
      let r = await srv.request('POST', `${T}/ask`, { token: TOKEN, body: { nl: q.nl } });
      if (q.direction) {
        if (r.status !== 400 || !JSON.stringify(r.json).includes('ambiguous_graph_direction')) wrong.push(`${q.nl}: expected ambiguous_graph_direction, got ${r.status}`);
        r = await srv.request('POST', `${T}/ask`, { token: TOKEN, body: { nl: q.nl, direction: q.direction } });
      }
      if (r.status !== 200) {
        wrong.push(`${q.nl}: ${r.status} ${r.text.slice(0, 200)}`);
        continue;
      }
      const got = (r.json.rows as Array<Record<string, unknown>>).map(norm);
      const same = q.ordered ? JSON.stringify(got) === JSON.stringify(gold) : JSON.stringify([...got].sort()) === JSON.stringify([...gold].sort());
      if (!same) wrong.push(`${q.nl}: got ${JSON.stringify(got.slice(0, 4))} want ${JSON.stringify(gold.slice(0, 4))}`);
    }
    const right = QUESTIONS.length - wrong.length;
    console.log(`held-out zoo domain: ${right}/${QUESTIONS.length} right\n${wrong.join('\n')}`);
    expect(right / QUESTIONS.length).toBeGreaterThanOrEqual(0.8);
  }, 120_000);
});
