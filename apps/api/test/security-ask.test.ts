/**
 * /ask under security: the English lexicon, its "did you mean" suggestions and interpretations
 * never reveal a value of a row the user's policy hides or the stored value of a masked column,
 * and the intent cache never carries one user's plan to another. Real HTTPS against the built server.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';
import { manifest } from './manifests';

const T = `/v1/tenants/${TENANT}`;
const PEOPLE = manifest('app.people', ['id'], { id: 'str', name: 'str', region: { ty: 'str', required: true }, city: 'str' });
const ROWS = [
  { id: 'p1', name: 'Ann', region: 'eu', city: 'Paris' },
  { id: 'p2', name: 'Ben', region: 'eu', city: 'Lisbon' },
  { id: 'p3', name: 'Cyd', region: 'us', city: 'Boston' },
  { id: 'p4', name: 'Dee', region: 'us', city: 'Chicago' },
];

describe('/ask under row-level security and masks', () => {
  let srv: TestServer;
  const tokens: Record<string, string> = { owner: TOKEN };
  const ask = (user: string, nl: string, extra: Record<string, unknown> = {}) => srv.request('POST', `${T}/ask`, { token: tokens[user], body: { nl, show_plan: true, ...extra } });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: PEOPLE, contentType: 'text/plain' })).status).toBe(200);
    expect((await srv.request('POST', `${T}/rows/app.people/_batch`, { token: TOKEN, body: ROWS })).status).toBe(200);
    const put = (p: string, body: unknown) => srv.request('PUT', `${T}${p}`, { token: TOKEN, body });
    expect((await put('/users/alice', { grants: { 'app.people': ['read'] }, attributes: { region: 'eu' } })).status).toBe(200);
    expect((await put('/users/carol', { grants: { 'app.people': ['read'] } })).status).toBe(200);
    expect((await put('/policies/alice_region', { schema: 'app.people', users: ['alice'], using: "region = user_attr('region')" })).status).toBe(200);
    expect((await put('/policies/carol_city', { schema: 'app.people', users: ['carol'], mask: { column: 'city', kind: 'redact' } })).status).toBe(200);
    for (const u of ['alice', 'carol']) tokens[u] = (await srv.request('POST', `${T}/users/${u}/tokens`, { token: TOKEN, body: {} })).json.token;
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('a value only hidden rows hold is not in the user\'s lexicon: no match, no suggestion, no interpretation names it', async () => {
    // the owner's lexicon knows every city (and its cache now holds the shape "people in <city>")
    const o = await ask('owner', 'people in Boston');
    expect([o.status, o.json.rows, o.json.interpretation]).toEqual([200, [{ name: 'Cyd' }], 'people with city Boston']);
    expect((await ask('owner', 'people in Bostn')).json.suggestions).toContain('Boston');
    for (const q of ['people in Boston', 'people in Bostn', 'how many people are in Chicago', 'people in Chicgo']) {
      const r = await ask('alice', q);
      expect([q, r.status, r.json.error]).toEqual([q, 400, 'validation_failed']);
      expect(r.json.cache).toBeUndefined();
      expect(r.text).not.toMatch(/Boston|Chicago|Cyd|Dee/);
    }
    // what alice may see is matched, suggested and interpreted as before, from her own intent cache
    const a = await ask('alice', 'people in Paris');
    expect([a.status, a.json.rows, a.json.interpretation, a.json.cache]).toEqual([200, [{ name: 'Ann' }], 'people with city Paris', 'miss']);
    expect((await ask('alice', 'people in Lisbon')).json).toMatchObject({ rows: [{ name: 'Ben' }], cache: 'hit' });
    expect((await ask('alice', 'people in Pariss')).json.suggestions).toContain('Paris');
  });

  it('a masked column\'s stored values are not in the user\'s lexicon', async () => {
    for (const q of ['people in Paris', 'people in Pariss', 'how many people are in Lisbon']) {
      const r = await ask('carol', q);
      expect([q, r.status]).toEqual([q, 400]);
      expect(r.text).not.toMatch(/Paris"|Lisbon"|Boston|Chicago/);
    }
    // the owner's answers are unchanged by the restricted users' compilers
    expect((await ask('owner', 'people in Lisbon')).json).toMatchObject({ rows: [{ name: 'Ben' }], cache: 'hit' });
  });

  it('a policy change reaches the next question: a new grant version, a new lexicon', async () => {
    expect((await srv.request('DELETE', `${T}/policies/alice_region`, { token: TOKEN })).status).toBe(200);
    const r = await ask('alice', 'people in Boston');
    expect([r.status, r.json.rows]).toEqual([200, [{ name: 'Cyd' }]]);
  });
});
