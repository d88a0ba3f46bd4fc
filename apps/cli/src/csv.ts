/**
 * An RFC 4180 CSV reader (quoted fields, `""` escapes, line breaks inside quotes, CRLF), fed
 * chunk by chunk so a large file streams. Why our own: a 60-line state machine, where a
 * package would be the CLI's largest dependency.
 */
export class CsvParser {
  private field = '';
  private record: string[] = [];
  private quoted = false;
  private afterQuote = false;
  private pendingCr = false;
  private started = false;

  /** Feeds text; returns the records completed by it. */
  push(text: string): string[][] {
    const out: string[][] = [];
    for (const ch of text) {
      if (this.pendingCr) {
        this.pendingCr = false;
        if (ch === '\n') continue;
      }
      if (this.quoted) {
        if (ch === '"') {
          this.quoted = false;
          this.afterQuote = true;
        } else this.field += ch;
        continue;
      }
      if (ch === '"') {
        if (this.afterQuote) this.field += '"'; // "" inside quotes
        this.quoted = true;
        this.afterQuote = false;
        this.started = true;
        continue;
      }
      this.afterQuote = false;
      if (ch === ',') {
        this.record.push(this.field);
        this.field = '';
        this.started = true;
      } else if (ch === '\n' || ch === '\r') {
        if (ch === '\r') this.pendingCr = true;
        this.endRecord(out);
      } else {
        this.field += ch;
        this.started = true;
      }
    }
    return out;
  }

  /** Ends the input; returns the last record if the file did not end with a line break. */
  end(): string[][] {
    if (this.quoted) throw new Error('CSV: a quoted field is not closed at the end of the input');
    const out: string[][] = [];
    this.endRecord(out);
    return out;
  }

  private endRecord(out: string[][]): void {
    if (this.started || this.field !== '' || this.record.length) {
      this.record.push(this.field);
      out.push(this.record);
    }
    this.record = [];
    this.field = '';
    this.started = false;
  }
}
