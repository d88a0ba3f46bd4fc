/**
 * A small typed JSON Schema builder: each builder returns a JSON Schema (2020-12, the dialect
 * of OpenAPI 3.1) that also carries the TypeScript type it describes, so one declaration gives
 * both the server's OpenAPI document and the client's types (`Static<typeof X>`).
 *
 * Why our own and not TypeBox: the client is published with no runtime dependency, and the
 * subset we need (objects, arrays, unions, literals, records) is ~100 lines.
 *
 * @example
 *   const Row = t.object({ id: t.string(), n: t.optional(t.integer()) });
 *   type Row = Static<typeof Row>; // { id: string; n?: number }
 */
export type JsonSchema = { [k: string]: unknown };

declare const TYPE: unique symbol;
export interface TSchema<T = unknown> {
  readonly [TYPE]?: T;
  readonly json: JsonSchema;
  readonly optional?: boolean;
}
export interface TOptional<T> extends TSchema<T> {
  readonly optional: true;
}
export type Static<S> = S extends TSchema<infer T> ? T : never;

type Props = Record<string, TSchema<any>>;
type OptKeys<P extends Props> = { [K in keyof P]: P[K] extends TOptional<any> ? K : never }[keyof P];
type ReqKeys<P extends Props> = Exclude<keyof P, OptKeys<P>>;
type Flat<T> = { [K in keyof T]: T[K] } & {};
export type ObjectOf<P extends Props> = Flat<{ [K in ReqKeys<P>]: Static<P[K]> } & { [K in OptKeys<P>]?: Static<P[K]> }>;

type Doc = { description?: string; title?: string; [k: string]: unknown };

function mk<T>(json: JsonSchema): TSchema<T> {
  return { json };
}

export const t = {
  string: (doc: Doc = {}): TSchema<string> => mk({ type: 'string', ...doc }),
  integer: (doc: Doc = {}): TSchema<number> => mk({ type: 'integer', ...doc }),
  number: (doc: Doc = {}): TSchema<number> => mk({ type: 'number', ...doc }),
  boolean: (doc: Doc = {}): TSchema<boolean> => mk({ type: 'boolean', ...doc }),
  null: (): TSchema<null> => mk({ type: 'null' }),
  /** Any JSON value. */
  any: (doc: Doc = {}): TSchema<any> => mk({ ...doc }),
  literal: <const V extends string | number | boolean>(value: V, doc: Doc = {}): TSchema<V> => mk({ const: value, ...doc }),
  enum: <const V extends readonly string[]>(values: V, doc: Doc = {}): TSchema<V[number]> => mk({ type: 'string', enum: [...values], ...doc }),
  array: <S extends TSchema<any>>(items: S, doc: Doc = {}): TSchema<Static<S>[]> => mk({ type: 'array', items: items.json, ...doc }),
  /** An object; properties wrapped in `t.optional` may be absent. Extra keys are allowed unless `closed`. */
  object: <P extends Props>(props: P, doc: Doc & { closed?: boolean } = {}): TSchema<ObjectOf<P>> => {
    const { closed, ...rest } = doc;
    const required = Object.keys(props).filter((k) => !props[k].optional);
    const properties = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, s.json]));
    return mk({ type: 'object', properties, ...(required.length ? { required } : {}), ...(closed ? { additionalProperties: false } : {}), ...rest });
  },
  /** An object whose keys are free, each value of one schema. */
  record: <S extends TSchema<any>>(values: S, doc: Doc = {}): TSchema<Record<string, Static<S>>> =>
    mk({ type: 'object', additionalProperties: values.json, ...doc }),
  union: <S extends TSchema<any>[]>(schemas: [...S], doc: Doc = {}): TSchema<Static<S[number]>> => mk({ anyOf: schemas.map((s) => s.json), ...doc }),
  nullable: <S extends TSchema<any>>(s: S): TSchema<Static<S> | null> => mk({ anyOf: [s.json, { type: 'null' }] }),
  optional: <S extends TSchema<any>>(s: S): TOptional<Static<S>> => ({ json: s.json, optional: true }) as TOptional<Static<S>>,
};
