/**
 * The read-optimised, in-memory form of one relation: node strings interned to
 * dense integer ids, and per node its outgoing (and incoming) edges as parallel
 * arrays. Traversals (traverse.ts) walk the integer arrays; strings are only
 * touched at the edges of a request.
 *
 * Writes are idempotent by (src, dst, owner): `put` upserts, `remove` removes if
 * present, so re-applying a frame already seen in a snapshot is harmless.
 */

/** Outgoing edges of one node. `owner`/`props` exist only once some edge needs them. */
export interface OutEdges {
  to: number[];
  /** Weight from the manifest's weight column; NaN when the row had none. */
  w: number[];
  owner?: (string | null)[];
  props?: (Readonly<Record<string, number>> | undefined)[];
}

interface InEdges {
  from: number[];
  owner?: (string | null)[];
}

export interface EdgeInput {
  readonly src: string;
  readonly dst: string;
  readonly owner: string | null;
  readonly weight?: number;
  readonly props?: Readonly<Record<string, number>>;
}

export class Adjacency {
  private readonly ids = new Map<string, number>();
  /** Node string by id. */
  readonly names: string[] = [];
  /** Outgoing edges by node id (undefined: none). */
  readonly out: (OutEdges | undefined)[] = [];
  private readonly inn: (InEdges | undefined)[] = [];
  private edges = 0;

  get nodeCount(): number {
    return this.names.length;
  }

  get edgeCount(): number {
    return this.edges;
  }

  idOf(node: string): number | undefined {
    return this.ids.get(node);
  }

  private intern(node: string): number {
    let id = this.ids.get(node);
    if (id === undefined) {
      id = this.names.length;
      this.ids.set(node, id);
      this.names.push(node);
      this.out.push(undefined);
      this.inn.push(undefined);
    }
    return id;
  }

  /** Adds the edge, or updates its weight/props when (src, dst, owner) is already there. */
  put(e: EdgeInput): void {
    const s = this.intern(e.src);
    const d = this.intern(e.dst);
    const o = (this.out[s] ??= { to: [], w: [] });
    const at = findEdge(o.to, o.owner, d, e.owner);
    const w = e.weight ?? NaN;
    if (at >= 0) {
      o.w[at] = w;
      if (e.props !== undefined || o.props) (o.props ??= new Array(o.to.length).fill(undefined))[at] = e.props;
      return;
    }
    this.append(e);
  }

  /** Adds an edge known to be new (bulk load from the store's unique keys): no duplicate scan. */
  append(e: EdgeInput): void {
    const s = this.intern(e.src);
    const d = this.intern(e.dst);
    const o = (this.out[s] ??= { to: [], w: [] });
    const n = o.to.length;
    o.to.push(d);
    o.w.push(e.weight ?? NaN);
    if (e.owner !== null || o.owner) (o.owner ??= new Array(n).fill(null)).push(e.owner);
    if (e.props !== undefined || o.props) (o.props ??= new Array(n).fill(undefined)).push(e.props);
    const i = (this.inn[d] ??= { from: [] });
    if (e.owner !== null || i.owner) (i.owner ??= new Array(i.from.length).fill(null)).push(e.owner);
    i.from.push(s);
    this.edges++;
  }

  /** Removes the edge (src, dst, owner) if present. */
  remove(src: string, dst: string, owner: string | null): void {
    const s = this.ids.get(src);
    const d = this.ids.get(dst);
    if (s === undefined || d === undefined) return;
    const o = this.out[s];
    if (!o) return;
    const at = findEdge(o.to, o.owner, d, owner);
    if (at < 0) return;
    swapRemove(o.to, at);
    swapRemove(o.w, at);
    if (o.owner) swapRemove(o.owner, at);
    if (o.props) swapRemove(o.props, at);
    const i = this.inn[d];
    if (i) {
      const j = findEdge(i.from, i.owner, s, owner);
      if (j >= 0) {
        swapRemove(i.from, j);
        if (i.owner) swapRemove(i.owner, j);
      }
    }
    this.edges--;
  }

  /** Distinct targets of `node`'s outgoing edges. */
  neighbors(node: string): string[] {
    const id = this.ids.get(node);
    const o = id === undefined ? undefined : this.out[id];
    if (!o) return [];
    const names = this.names;
    if (!o.owner) return o.to.map((t) => names[t]);
    return [...new Set(o.to)].map((t) => names[t]);
  }

  /** Distinct sources of `node`'s incoming edges. */
  sources(node: string): string[] {
    const id = this.ids.get(node);
    const i = id === undefined ? undefined : this.inn[id];
    if (!i) return [];
    const names = this.names;
    if (!i.owner) return i.from.map((f) => names[f]);
    return [...new Set(i.from)].map((f) => names[f]);
  }
}

function findEdge(ends: number[], owners: (string | null)[] | undefined, end: number, owner: string | null): number {
  for (let k = 0; k < ends.length; k++) {
    if (ends[k] === end && (owners ? owners[k] : null) === owner) return k;
  }
  return -1;
}

function swapRemove<T>(a: T[], at: number): void {
  const last = a.length - 1;
  if (at !== last) a[at] = a[last];
  a.pop();
}
