import * as http from 'http';
import type { AddressInfo } from 'net';
import { ModelAdapter, schemaSummary } from './model';
import { lex } from './lex';
import { Lexicon } from './lexicon';
import { SchemaModel } from './schema';
import { FLEET, values } from './testing/fleet';

describe('the optional model adapter (a local fake chat-completions endpoint)', () => {
  let server: http.Server;
  let url = '';
  let reply: (body: any, res: http.ServerResponse) => void = () => undefined;
  const seen: any[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let b = '';
      req.on('data', (d) => (b += d));
      req.on('end', () => {
        seen.push({ auth: req.headers.authorization, path: req.url, body: JSON.parse(b) });
        reply(JSON.parse(b), res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const lexed = async (nl: string) => lex(nl, await Lexicon.build(new SchemaModel(FLEET), values), new Date());
  const answer = (content: string) => (_b: unknown, res: http.ServerResponse) => res.end(JSON.stringify({ choices: [{ message: { content } }] }));

  it('sends the schema summary, the parameters and the key; answers a validated plan', async () => {
    reply = answer('Here: {"op":"scan","schema":"fleet.ships","alias":"s"}');
    const m = new ModelAdapter({ url, model: 'tiny', key: 'k1' });
    const plan = await m.compile('all the vessels from Oslo', FLEET, await lexed('all the vessels from Oslo'));
    expect(plan).toEqual({ op: 'scan', schema: 'fleet.ships', alias: 's' });
    const last = seen[seen.length - 1];
    expect(last.path).toBe('/v1/chat/completions');
    expect(last.auth).toBe('Bearer k1');
    expect(last.body.model).toBe('tiny');
    expect(last.body.messages[1].content).toContain(schemaSummary(FLEET));
    expect(last.body.messages[1].content).toContain('$1 = "Oslo"');
  });

  it('a bad answer, an invalid plan, an HTTP error or a timeout is undefined (the grammar error stands)', async () => {
    const m = new ModelAdapter({ url, model: 'tiny', timeoutMs: 200 });
    const l = await lexed('anything');
    reply = answer('I cannot help with that');
    expect(await m.compile('anything', FLEET, l)).toBeUndefined();
    reply = answer('{"op":"drop_everything"}');
    expect(await m.compile('anything', FLEET, l)).toBeUndefined();
    reply = (_b, res) => ((res.statusCode = 500), res.end('{}'));
    expect(await m.compile('anything', FLEET, l)).toBeUndefined();
    reply = () => undefined; // never answers
    expect(await m.compile('anything', FLEET, l)).toBeUndefined();
  });
});
