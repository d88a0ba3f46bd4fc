/**
 * The graph checkpoint: relations built when it was taken come back from their images at open
 * (no scan of the edge keys), the frames after it are replayed into them, and every answer
 * (neighbors, sources, BFS, weighted shortest path with props) is what it was before the
 * restart; a damaged image falls back to building from the keys.
 */
import { ClassicLevel } from 'classic-level';
import { keyOf, type TenantStore } from '@mmdb/storage';
import { GraphIndex } from '../src';
import { tempDir } from './fixtures';
import { TenantStore as Store } from '@mmdb/storage';

const NODES = `namespace = "g"\ntable = "nodes"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "str"\nrequired = true\n`;
const EDGES = `namespace = "g"\ntable = "edges"\nprimary_key = ["src", "dst"]\n[[columns]]\nname = "src"\nty = "str"\nrequired = true\n[[columns]]\nname = "dst"\nty = "str"\nrequired = true\n[[columns]]\nname = "w"\nty = "f64"\n[[relations]]\nname = "link"\nsource = "g.nodes"\nsource_columns = ["src"]\ntarget = "g.nodes"\ncolumns = ["dst"]\nweight = "w"\n`;

async function answers(g: GraphIndex) {
  const out: unknown[] = [];
  for (const n of ['n0', 'n1', 'n7', 'n42', 'zz']) {
    out.push(await g.neighbors('g.edges', 'link', n));
    out.push(await g.bfs('g.edges', 'link', n, 3));
    out.push(await g.dijkstra('g.edges', 'link', n, 'n99'));
  }
  return out;
}

describe('graph checkpoint', () => {
  const open = async (dir: string) => {
    const graph = new GraphIndex();
    const store = await Store.open({ dir, participants: [graph], sync: false, checkpointFrames: 0, checkpointMs: 0 });
    return { graph, store };
  };
  const crash = async (store: TenantStore) => {
    await (store as unknown as { db: { close(): Promise<void> } }).db.close();
    (store as unknown as { closed: boolean }).closed = true;
  };

  it('restores built relations from their images, replays later frames, and falls back to the keys when damaged', async () => {
    const dir = tempDir();
    let { graph, store } = await open(dir);
    await store.registerSchema(NODES);
    await store.registerSchema(EDGES);
    const changes = [];
    for (let i = 0; i < 3000; i++) changes.push({ op: 'put' as const, schema: 'g.edges', row: { src: `n${i % 300}`, dst: `n${(i * 7) % 311}`, w: 1 + (i % 5) } });
    await store.commit({ changes });
    await graph.neighbors('g.edges', 'link', 'n0'); // builds the adjacency
    await store.checkpoint();
    // after the checkpoint: new edges, a changed weight, deletes
    await store.put('g.edges', { src: 'n1', dst: 'n99', w: 0.5 });
    await store.put('g.edges', { src: 'n7', dst: 'n49', w: 9 });
    await store.delete('g.edges', ['n0', 'n0']);
    await store.delete('g.edges', ['n42', `n${(42 * 7) % 311}`]);
    const before = await answers(graph);
    await crash(store);
    ({ graph, store } = await open(dir));
    expect([graph.stats.openedFrom, graph.stats.relations]).toEqual(['checkpoint', 1]);
    expect(store.recovery.replayed.graph).toBe(4);
    expect(await answers(graph)).toEqual(before);
    expect((await store.verify()).ok).toBe(true);
    await store.close(); // images the relation again (changed by the replay)
    ({ graph, store } = await open(dir));
    expect(store.recovery.replayed.graph).toBe(0);
    expect(await answers(graph)).toEqual(before);
    await store.close();
    // a flipped byte in the image: the relation is built from its edge keys instead
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open();
    const k = keyOf('E', [null, 'k', 'g.edges', 'link', 0]);
    const v = Buffer.from((await db.get(k)) as Buffer);
    v[v.length - 3] ^= 0xff;
    await db.put(k, v);
    await db.close();
    ({ graph, store } = await open(dir));
    expect(graph.stats.openedFrom).toBe('keys');
    expect(await answers(graph)).toEqual(before);
    await store.close();
  });
});
