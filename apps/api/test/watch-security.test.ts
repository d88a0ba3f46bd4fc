/**
 * Watch streams under row-level security and column masks, over real HTTPS with the `eventsource`
 * client: a region-bound user and a masked user subscribe beside the owner; no hidden row and no
 * stored value of a masked column reaches them in any event (snapshots, inserts, both images of
 * updates, deletes, aggregates, resumes). A policy change while they listen resets their stream
 * under the new policy; losing the read grant ends it.
 */
import { bootstrapEnv, tableToml, TENANT, TestServer, TOKEN } from './server';
import { EventSource, tokenFetch, type EventSourceLike } from './sse-client';

const T = `/v1/tenants/${TENANT}`;
const PEOPLE = tableToml('app.people', [['region', 'str'], ['ssn', 'str']]);

interface Ev {
  event: string;
  id: string;
  data: Record<string, any>;
  text: string;
}

/** An eventsource subscriber collecting every event it gets (its raw data text too). */
class Sub {
  readonly events: Ev[] = [];
  readonly failures: string[] = [];
  private readonly es: EventSourceLike;
  constructor(url: string, token: string, ca: string, lastEventId?: string) {
    const base = tokenFetch(token, ca);
    const f = lastEventId
      ? (((u: string, init: RequestInit & { headers: Record<string, string> }) => base(u, { ...init, headers: { 'Last-Event-ID': lastEventId, ...init.headers } })) as typeof fetch)
      : base;
    this.es = new EventSource(url, { fetch: f });
    for (const name of ['snapshot', 'position', 'change', 'reset', 'error']) {
      this.es.addEventListener(name, (e) => {
        const m = e as MessageEvent & { message?: string; code?: number };
        // the client's own connection errors carry no data (a reconnect follows, or a refusal ends it)
        if (m.data === undefined) this.failures.push(`${m.code ?? ''} ${m.message ?? ''}`);
        else this.events.push({ event: name, id: m.lastEventId, data: JSON.parse(m.data), text: m.data });
      });
    }
  }
  of(name: string): Ev[] {
    return this.events.filter((e) => e.event === name);
  }
  changes(): Array<Record<string, any>> {
    return this.of('change').flatMap((e) => e.data.changes);
  }
  get text(): string {
    return this.events.map((e) => e.text).join('\n');
  }
  async until(pred: (s: Sub) => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (!pred(this)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${this.text}; connection errors: ${this.failures.join('; ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  close(): void {
    this.es.close();
  }
}

describe('watch under row-level security and masks', () => {
  let srv: TestServer;
  const tokens: Record<string, string> = { owner: TOKEN };
  const subs: Sub[] = [];
  const as = (method: string, p: string, body?: unknown) => srv.request(method, `${T}${p}`, { token: TOKEN, body });
  const put = async (row: Record<string, unknown>) => expect((await as('PUT', `/rows/app.people/${row.id}`, row)).status).toBe(200);
  const sub = (user: string, sql: string, extra = '', lastEventId?: string) => {
    const s = new Sub(`${srv.url}${T}/watch?sql=${encodeURIComponent(sql)}${extra}`, tokens[user], srv.ca, lastEventId);
    subs.push(s);
    return s;
  };

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_WATCH_COALESCE_MS: '20', DB_WATCH_HEARTBEAT_MS: '500' })).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: PEOPLE, contentType: 'text/plain' })).status).toBe(200);
    await put({ id: 11, region: 'eu', ssn: 's111' });
    await put({ id: 21, region: 'us', ssn: 's199' });
    expect((await as('PUT', '/users/alice', { grants: { 'app.people': ['read'] }, attributes: { region: 'eu' } })).status).toBe(200);
    expect((await as('PUT', '/policies/people_region', { schema: 'app.people', users: ['alice'], using: "region = user_attr('region')" })).status).toBe(200);
    expect((await as('PUT', '/users/carol', { grants: { 'app.people': ['read'] } })).status).toBe(200);
    expect((await as('PUT', '/policies/carol_ssn', { schema: 'app.people', users: ['carol'], mask: { column: 'ssn', kind: 'redact' } })).status).toBe(200);
    for (const name of ['alice', 'carol']) tokens[name] = (await as('POST', `/users/${name}/tokens`, {})).json.token;
  }, 60_000);
  afterAll(async () => {
    for (const s of subs) s.close();
    await srv?.stop();
  });

  it('filters and masks every event of each subscriber through its own policy, beside the owner', async () => {
    const SQL = 'SELECT id, region, ssn FROM app.people';
    const owner = sub('owner', SQL, '&initial=true');
    const alice = sub('alice', SQL, '&initial=true');
    const carol = sub('carol', SQL, '&initial=true');
    const aliceAgg = sub('alice', 'SELECT region, count(*) AS n FROM app.people GROUP BY region', '&initial=true');
    for (const s of [owner, alice, carol, aliceAgg]) await s.until((x) => x.of('snapshot').length === 1, 'the snapshot');
    expect(owner.of('snapshot')[0].data.rows).toEqual([{ id: 11, region: 'eu', ssn: 's111' }, { id: 21, region: 'us', ssn: 's199' }]);
    expect(alice.of('snapshot')[0].data.rows).toEqual([{ id: 11, region: 'eu', ssn: 's111' }]);
    expect(carol.of('snapshot')[0].data.rows).toEqual([{ id: 11, region: 'eu', ssn: '****' }, { id: 21, region: 'us', ssn: '****' }]);
    expect(aliceAgg.of('snapshot')[0].data.rows).toEqual([{ region: 'eu', n: 1 }]);

    await put({ id: 12, region: 'eu', ssn: 's222' }); // everyone: insert
    await put({ id: 22, region: 'us', ssn: 's288' }); // hidden from alice
    await put({ id: 11, region: 'eu', ssn: 's333' }); // carol: the masked row did not change, nothing
    await put({ id: 21, region: 'eu', ssn: 's177' }); // alice: comes into sight (its old image is hidden)
    await put({ id: 12, region: 'us', ssn: 's244' }); // alice: leaves her sight, a delete
    expect((await as('DELETE', '/rows/app.people/22')).status).toBe(200); // hidden from alice
    await owner.until((x) => x.changes().length === 6, 'the owner to see all six changes');
    await alice.until((x) => x.changes().length === 4, "alice's changes");
    await carol.until((x) => x.changes().length === 5, "carol's changes");
    const last = owner.of('change').at(-1)!.data.lsn;
    // the aggregate stream has covered the last frame (a change or, at a heartbeat, a position)
    await aliceAgg.until((x) => x.events.some((e) => (e.event === 'change' || e.event === 'position') && e.data.lsn >= last), "alice's aggregate");

    expect(owner.changes().find((c) => c.key[0] === 11)).toMatchObject({ op: 'update', old: { ssn: 's111' }, new: { ssn: 's333' } });
    expect(alice.changes().map((c) => [c.op, c.key[0], c.old ?? null, c.new ?? null])).toEqual([
      ['insert', 12, null, { id: 12, region: 'eu', ssn: 's222' }],
      ['update', 11, { id: 11, region: 'eu', ssn: 's111' }, { id: 11, region: 'eu', ssn: 's333' }],
      ['insert', 21, null, { id: 21, region: 'eu', ssn: 's177' }],
      ['delete', 12, { id: 12, region: 'eu', ssn: 's222' }, null],
    ]);
    expect(alice.text).not.toMatch(/s288|s199|s244|"us"/);
    expect(alice.changes().map((c) => c.key[0])).not.toContain(22);
    expect(aliceAgg.text).not.toMatch(/"us"/);
    // folded onto the snapshot (bursts may merge): each update starts from what was held, and ends at eu = 2
    let held = aliceAgg.of('snapshot')[0].data.rows[0];
    for (const c of aliceAgg.changes()) {
      expect([c.op, c.key, c.old]).toEqual(['update', ['eu'], held]);
      held = c.new;
    }
    expect(held).toEqual({ region: 'eu', n: 2 });
    expect(carol.changes().map((c) => [c.op, c.key[0]])).toEqual([['insert', 12], ['insert', 22], ['update', 21], ['update', 12], ['delete', 22]]);
    for (const c of carol.changes()) for (const img of [c.old, c.new]) if (img) expect(img.ssn).toBe('****');
    expect(carol.text).not.toMatch(/s111|s199|s222|s288|s333|s177|s244/);

    // a resume from the first snapshot replays the same filtered, masked history
    const from = alice.of('snapshot')[0].id;
    const again = sub('alice', SQL, '', from);
    await again.until((x) => x.changes().length === 4, 'the replay');
    expect(again.changes()).toEqual(alice.changes());
    // an aggregate resumed from its snapshot: its groups rewound through the log under her policy
    const aggAgain = sub('alice', 'SELECT region, count(*) AS n FROM app.people GROUP BY region', '', aliceAgg.of('snapshot')[0].id);
    let again0 = aliceAgg.of('snapshot')[0].data.rows[0];
    await aggAgain.until((x) => x.changes().length > 0 && x.changes().at(-1)!.new?.n === 2, "alice's aggregate replay");
    for (const c of aggAgain.changes()) {
      expect([c.op, c.key, c.old]).toEqual(['update', ['eu'], again0]);
      again0 = c.new;
    }
    expect(aggAgain.text).not.toMatch(/"us"/);
    expect(aggAgain.of('reset')).toEqual([]);
    const carolAgain = sub('carol', SQL, '', carol.of('snapshot')[0].id);
    await carolAgain.until((x) => x.changes().length === 5, "carol's replay");
    expect(carolAgain.text).not.toMatch(/s111|s199|s222|s288|s333|s177|s244/);
  });

  it('a policy change while subscribed resets the stream under the new policy; losing the read grant ends it', async () => {
    const carol = sub('carol', 'SELECT id, region, ssn FROM app.people', '&initial=true');
    await carol.until((x) => x.of('snapshot').length === 1, 'the snapshot');
    expect((await as('PUT', '/policies/carol_region', { schema: 'app.people', users: ['carol'], using: "region = 'eu'" })).status).toBe(200);
    await carol.until((x) => x.of('reset').length === 1, 'the policy reset');
    const reset = carol.of('reset')[0].data;
    expect(reset.reason).toBe('policy');
    expect(reset.rows).toEqual([{ id: 11, region: 'eu', ssn: '****' }, { id: 21, region: 'eu', ssn: '****' }]);
    await put({ id: 23, region: 'us', ssn: 's300' }); // now hidden from carol
    await put({ id: 13, region: 'eu', ssn: 's301' });
    await carol.until((x) => x.changes().length === 1, 'a change under the new policy');
    expect(carol.changes()).toEqual([{ schema: 'app.people', key: [13], op: 'insert', new: { id: 13, region: 'eu', ssn: '****' } }]);
    expect(carol.text).not.toMatch(/s300|s301/);
    expect(carol.changes().map((c) => c.key[0])).not.toContain(23);
    expect((await as('PUT', '/users/carol', { grants: {} })).status).toBe(200);
    await carol.until((x) => x.of('error').length === 1, 'the end of the stream');
    expect(carol.of('error')[0].data.error).toBe('forbidden');
  });
});
