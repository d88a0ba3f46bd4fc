/**
 * Optional language model: an OpenAI-compatible chat-completions endpoint, asked only on a
 * miss the grammar cannot compile. It gets a schema summary and must answer a plan as JSON;
 * the compiler validates that plan (validatePlan and the visible schemas) before anything runs.
 * Timeouts and bad answers return undefined, so the grammar's error stands.
 */
import type { TableManifest } from '@mmdb/core';
import { validatePlan, type PlanNode } from '@mmdb/plan';
import type { Lexed } from './lex';

export interface ModelConfig {
  readonly url: string;
  readonly model: string;
  readonly key?: string;
  readonly timeoutMs?: number;
}

export function schemaSummary(ms: readonly TableManifest[]): string {
  return ms
    .map((m) => {
      const cols = m.columns.map((c) => `${c.name} ${c.ty}`).join(', ');
      const fks = m.foreign_keys.map((f) => `${f.columns.join(',')} -> ${f.references}`).join('; ');
      return `${m.id}(${cols})${fks ? ` fks: ${fks}` : ''}${m.label ? ` label: ${m.label}` : ''}`;
    })
    .join('\n');
}

const SYSTEM = `You translate a natural-language question into a JSON plan tree of this database.
Nodes: {"op":"scan","schema":"ns.table","alias":"a"}, {"op":"filter","input":N,"predicate":E},
{"op":"join","kind":"inner","left":N,"right":N,"on":E}, {"op":"project","input":N,"columns":[{"name":"x","expr":E}]},
{"op":"aggregate","input":N,"group":[{"name":"g","expr":E}],"aggregates":[{"name":"v","fn":"count|sum|avg|min|max","args":[E],"star":true}]},
{"op":"sort","input":N,"keys":[{"expr":E,"desc":true}]}, {"op":"limit","input":N,"limit":{"kind":"lit","value":5}}, {"op":"distinct","input":N}.
Expressions: {"kind":"col","name":"a.col"}, {"kind":"lit","value":1}, {"kind":"param","index":1},
{"kind":"binary","op":"=|<>|<|<=|>|>=|and|or","left":E,"right":E}, {"kind":"like","arg":E,"pattern":E}, {"kind":"is_null","arg":E}.
The literals of the question are given as parameters: use {"kind":"param","index":i} for them.
Answer with the JSON plan only.`;

export class ModelAdapter {
  calls = 0;
  constructor(private readonly cfg: ModelConfig) {}

  /** A validated plan for the question, or undefined (no answer, timeout, not JSON, invalid plan). */
  async compile(nl: string, ms: readonly TableManifest[], lexed: Lexed): Promise<PlanNode | undefined> {
    this.calls++;
    const params = lexed.slots.flat().map((p, i) => `$${i + 1} = ${JSON.stringify(p)}`).join('\n');
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), this.cfg.timeoutMs ?? 10_000);
    try {
      const res = await fetch(this.cfg.url.replace(/\/$/, '') + '/chat/completions', {
        method: 'POST',
        signal: ctl.signal,
        headers: { 'content-type': 'application/json', ...(this.cfg.key ? { authorization: `Bearer ${this.cfg.key}` } : {}) },
        body: JSON.stringify({
          model: this.cfg.model,
          temperature: 0,
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: `Schema:\n${schemaSummary(ms)}\n\nParameters:\n${params || '(none)'}\n\nQuestion: ${nl}` },
          ],
        }),
      });
      if (!res.ok) return undefined;
      const body = (await res.json()) as { choices?: Array<{ message?: { content?: string } }> };
      const text = body.choices?.[0]?.message?.content ?? '';
      const json = text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
      return validatePlan(JSON.parse(json));
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
