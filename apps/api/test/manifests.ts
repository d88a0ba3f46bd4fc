/** Builds TOML manifests for tests from a compact description (no hand-copied TOML). */
export interface ColumnSpec {
  readonly ty: string;
  readonly required?: boolean;
  /** A vector column's dimension. */
  readonly dim?: number;
}

export function manifest(id: string, key: string[], columns: Record<string, string | ColumnSpec>, tail = ''): string {
  const [namespace, table] = id.split('.');
  const cols = Object.entries(columns).map(([name, c]) => {
    const spec = typeof c === 'string' ? { ty: c } : c;
    const required = spec.required ?? key.includes(name);
    return `[[columns]]\nname = "${name}"\nty = "${spec.ty}"\n${required ? 'required = true\n' : ''}${spec.dim !== undefined ? `dim = ${spec.dim}\n` : ''}`;
  });
  return `namespace = "${namespace}"\ntable = "${table}"\nprimary_key = ${JSON.stringify(key)}\n${cols.join('')}${tail}`;
}
