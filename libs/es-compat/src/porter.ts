/**
 * The Porter stemming algorithm as Lucene's `PorterStemFilter` runs it, which is what
 * Elasticsearch's `english` analyzer, the `porter_stem` filter and the `stemmer` filter with
 * `language: english` apply: M. F. Porter (1980) with the two departures of Porter's own
 * reference implementation (`bli` → `ble` instead of `abli` → `able`, and `logi` → `log`), and
 * words of one or two characters left alone.
 *
 * Written here rather than taken from npm: the installed stemmer (wink-porter2-stemmer, used by
 * libs/fts) is Porter2 / Snowball English, a different algorithm (`generously` → `generous`
 * there, `gener` here), so its terms are not the field's terms Elasticsearch indexes.
 */

class Stemmer {
  private b = '';
  private k = 0;
  private j = 0;

  stem(word: string): string {
    if (word.length <= 2) return word;
    this.b = word;
    this.k = word.length - 1;
    this.step1ab();
    this.step1c();
    this.step2();
    this.step3();
    this.step4();
    this.step5();
    return this.b.slice(0, this.k + 1);
  }

  /** b[i] is a consonant (a `y` is one at the start or after a vowel). */
  private cons(i: number): boolean {
    switch (this.b[i]) {
      case 'a': case 'e': case 'i': case 'o': case 'u': return false;
      case 'y': return i === 0 ? true : !this.cons(i - 1);
      default: return true;
    }
  }

  /** The number of vowel-consonant sequences in b[0..j]. */
  private m(): number {
    let n = 0;
    let i = 0;
    const j = this.j;
    for (;;) {
      if (i > j) return n;
      if (!this.cons(i)) break;
      i++;
    }
    i++;
    for (;;) {
      for (;;) {
        if (i > j) return n;
        if (this.cons(i)) break;
        i++;
      }
      i++;
      n++;
      for (;;) {
        if (i > j) return n;
        if (!this.cons(i)) break;
        i++;
      }
      i++;
    }
  }

  private vowelInStem(): boolean {
    for (let i = 0; i <= this.j; i++) if (!this.cons(i)) return true;
    return false;
  }

  private doubleC(j: number): boolean {
    return j >= 1 && this.b[j] === this.b[j - 1] && this.cons(j);
  }

  /** consonant-vowel-consonant ending at i, the last not w, x or y. */
  private cvc(i: number): boolean {
    if (i < 2 || !this.cons(i) || this.cons(i - 1) || !this.cons(i - 2)) return false;
    const ch = this.b[i];
    return ch !== 'w' && ch !== 'x' && ch !== 'y';
  }

  private ends(s: string): boolean {
    const l = s.length;
    const o = this.k - l + 1;
    if (o < 0) return false;
    if (this.b.slice(o, this.k + 1) !== s) return false;
    this.j = this.k - l;
    return true;
  }

  private setTo(s: string): void {
    this.b = this.b.slice(0, this.j + 1) + s + this.b.slice(this.k + 1);
    this.k = this.j + s.length;
  }

  private r(s: string): void {
    if (this.m() > 0) this.setTo(s);
  }

  /** Plurals and -ed / -ing. */
  private step1ab(): void {
    if (this.b[this.k] === 's') {
      if (this.ends('sses')) this.k -= 2;
      else if (this.ends('ies')) this.setTo('i');
      else if (this.b[this.k - 1] !== 's') this.k--;
    }
    if (this.ends('eed')) {
      if (this.m() > 0) this.k--;
    } else if ((this.ends('ed') || this.ends('ing')) && this.vowelInStem()) {
      this.k = this.j;
      if (this.ends('at')) this.setTo('ate');
      else if (this.ends('bl')) this.setTo('ble');
      else if (this.ends('iz')) this.setTo('ize');
      else if (this.doubleC(this.k)) {
        this.k--;
        const ch = this.b[this.k];
        if (ch === 'l' || ch === 's' || ch === 'z') this.k++;
      } else if (this.m() === 1 && this.cvc(this.k)) this.setTo('e');
    }
  }

  /** A terminal y to i when there is another vowel in the stem. */
  private step1c(): void {
    if (this.ends('y') && this.vowelInStem()) this.b = this.b.slice(0, this.k) + 'i' + this.b.slice(this.k + 1);
  }

  private first(pairs: ReadonlyArray<readonly [string, string]>): void {
    for (const [from, to] of pairs) {
      if (this.ends(from)) {
        this.r(to);
        return;
      }
    }
  }

  /** Double suffixes to single ones (-ization → -ize), when m() > 0. */
  private step2(): void {
    if (this.k < 1) return;
    const p = STEP2[this.b[this.k - 1]];
    if (p) this.first(p);
  }

  /** -ic-, -full, -ness. */
  private step3(): void {
    const p = STEP3[this.b[this.k]];
    if (p) this.first(p);
  }

  /** -ant, -ence, … removed when m() > 1. */
  private step4(): void {
    if (this.k < 1) return;
    const list = STEP4[this.b[this.k - 1]];
    if (!list) return;
    let hit = false;
    for (const s of list) {
      if (!this.ends(s)) continue;
      if (s === 'ion' && !(this.j >= 0 && (this.b[this.j] === 's' || this.b[this.j] === 't'))) continue;
      hit = true;
      break;
    }
    if (hit && this.m() > 1) this.k = this.j;
  }

  /** A final -e removed, and -ll to -l, when m() > 1. */
  private step5(): void {
    this.j = this.k;
    if (this.b[this.k] === 'e') {
      const a = this.m();
      if (a > 1 || (a === 1 && !this.cvc(this.k - 1))) this.k--;
    }
    if (this.b[this.k] === 'l' && this.doubleC(this.k) && this.m() > 1) this.k--;
  }
}

const STEP2: Record<string, ReadonlyArray<readonly [string, string]>> = {
  a: [['ational', 'ate'], ['tional', 'tion']],
  c: [['enci', 'ence'], ['anci', 'ance']],
  e: [['izer', 'ize']],
  l: [['bli', 'ble'], ['alli', 'al'], ['entli', 'ent'], ['eli', 'e'], ['ousli', 'ous']],
  o: [['ization', 'ize'], ['ation', 'ate'], ['ator', 'ate']],
  s: [['alism', 'al'], ['iveness', 'ive'], ['fulness', 'ful'], ['ousness', 'ous']],
  t: [['aliti', 'al'], ['iviti', 'ive'], ['biliti', 'ble']],
  g: [['logi', 'log']],
};

const STEP3: Record<string, ReadonlyArray<readonly [string, string]>> = {
  e: [['icate', 'ic'], ['ative', ''], ['alize', 'al']],
  i: [['iciti', 'ic']],
  l: [['ical', 'ic'], ['ful', '']],
  s: [['ness', '']],
};

const STEP4: Record<string, readonly string[]> = {
  a: ['al'], c: ['ance', 'ence'], e: ['er'], i: ['ic'], l: ['able', 'ible'], n: ['ant', 'ement', 'ment', 'ent'],
  o: ['ion', 'ou'], s: ['ism'], t: ['ate', 'iti'], u: ['ous'], v: ['ive'], z: ['ize'],
};

const stemmer = new Stemmer();
const cache = new Map<string, string>();

/** The Porter stem of a lowercase term (memoized: analysis stems the same words again and again). */
export function porterStem(word: string): string {
  let s = cache.get(word);
  if (s === undefined) {
    s = stemmer.stem(word);
    if (cache.size >= 100_000) cache.clear();
    cache.set(word, s);
  }
  return s;
}
