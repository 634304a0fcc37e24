/**
 * Assignment selectors (docs/modules.md#selectors): `*` matches every agent; otherwise comma-separated terms that
 * must all hold, Kubernetes label-selector style over tags:
 *
 *   k=v   k!=v   k in (a,b)   k notin (a,b)   k   !k
 *
 * Reserved keys: `name`, `node_id`, `attr.<attribute>`; any other key is a tag. Values may use `*`
 * globs. `!=` and `notin` also hold when the key is absent (as in Kubernetes).
 */

export type SelectorTerm =
  | { op: "eq" | "ne"; key: string; value: string }
  | { op: "in" | "notin"; key: string; values: string[] }
  | { op: "exists" | "absent"; key: string };

export interface Selector {
  /** The source text, trimmed. */
  source: string;
  /** True for `*`. */
  all: boolean;
  terms: SelectorTerm[];
}

/** What a selector is matched against. */
export interface SelectorTarget {
  node_id: string;
  name: string;
  tags: Record<string, string>;
  attributes: Record<string, string>;
}

/** A parse error; `position` is the 0-based character offset in the original text. */
export class SelectorError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(`${message} at position ${position}`);
    this.name = "SelectorError";
  }
}

export const SELECTOR_MAX_LENGTH = 4096;
const KEY_RE = /^(?:attr\.[A-Za-z0-9_][A-Za-z0-9_.\-/]*|(?!attr\.)[A-Za-z0-9][A-Za-z0-9_.\-/]*)$/;
const KEY_CHAR = /[A-Za-z0-9_.\-/]/;
/** Value characters: anything printable except separators and operators. */
const VALUE_CHAR = /[^\s,()=!]/;

class Scanner {
  pos = 0;
  constructor(readonly text: string) {}
  get done() {
    return this.pos >= this.text.length;
  }
  peek(n = 0) {
    return this.text[this.pos + n] ?? "";
  }
  skipSpace() {
    while (!this.done && /\s/.test(this.peek())) this.pos++;
  }
  take(re: RegExp): string {
    const start = this.pos;
    while (!this.done && re.test(this.peek())) this.pos++;
    return this.text.slice(start, this.pos);
  }
  fail(message: string, at = this.pos): never {
    throw new SelectorError(message, at);
  }
}

function readKey(s: Scanner): string {
  s.skipSpace();
  const at = s.pos;
  const key = s.take(KEY_CHAR);
  if (!key) s.fail(s.done ? "expected a key, found the end" : `expected a key, found '${s.peek()}'`, at);
  if (!KEY_RE.test(key)) s.fail(`invalid key '${key}'`, at);
  return key;
}

function readValue(s: Scanner): string {
  s.skipSpace();
  const at = s.pos;
  const v = s.take(VALUE_CHAR);
  if (!v) s.fail(s.done ? "expected a value, found the end" : `expected a value, found '${s.peek()}'`, at);
  return v;
}

function readSet(s: Scanner): string[] {
  s.skipSpace();
  if (s.peek() !== "(") s.fail(s.done ? "expected '(', found the end" : `expected '(', found '${s.peek()}'`);
  s.pos++;
  const values: string[] = [readValue(s)];
  for (;;) {
    s.skipSpace();
    const c = s.peek();
    if (c === ")") {
      s.pos++;
      return values;
    }
    if (c !== ",") s.fail(s.done ? "expected ')', found the end" : `expected ',' or ')', found '${c}'`);
    s.pos++;
    values.push(readValue(s));
  }
}

/** Reads a word operator (`in`, `notin`) only when it stands alone. */
function wordAhead(s: Scanner, word: string): boolean {
  if (s.text.slice(s.pos, s.pos + word.length) !== word) return false;
  const next = s.text[s.pos + word.length] ?? "";
  return next === "" || /[\s(]/.test(next);
}

function readTerm(s: Scanner): SelectorTerm {
  s.skipSpace();
  if (s.peek() === "!") {
    s.pos++;
    return { op: "absent", key: readKey(s) };
  }
  const key = readKey(s);
  s.skipSpace();
  const c = s.peek();
  if (c === "" || c === ",") return { op: "exists", key };
  if (c === "=") {
    s.pos += s.peek(1) === "=" ? 2 : 1;
    return { op: "eq", key, value: readValue(s) };
  }
  if (c === "!" && s.peek(1) === "=") {
    s.pos += 2;
    return { op: "ne", key, value: readValue(s) };
  }
  if (wordAhead(s, "notin")) {
    s.pos += 5;
    return { op: "notin", key, values: readSet(s) };
  }
  if (wordAhead(s, "in")) {
    s.pos += 2;
    return { op: "in", key, values: readSet(s) };
  }
  return s.fail(`expected '=', '!=', 'in', 'notin', ',' or the end after key '${key}', found '${c}'`);
}

/** Parses a selector or throws SelectorError with the position of the problem. */
export function parseSelector(text: string): Selector {
  if (text.length > SELECTOR_MAX_LENGTH)
    throw new SelectorError(`selector longer than ${SELECTOR_MAX_LENGTH} characters`, SELECTOR_MAX_LENGTH);
  const s = new Scanner(text);
  s.skipSpace();
  if (s.done) s.fail("empty selector; use '*' for every agent");
  if (s.peek() === "*") {
    const at = s.pos;
    s.pos++;
    s.skipSpace();
    if (!s.done) s.fail("'*' must be the whole selector", at);
    return { source: text.trim(), all: true, terms: [] };
  }
  const terms: SelectorTerm[] = [readTerm(s)];
  for (;;) {
    s.skipSpace();
    if (s.done) break;
    if (s.peek() !== ",") s.fail(`expected ',' or the end, found '${s.peek()}'`);
    s.pos++;
    terms.push(readTerm(s));
  }
  return { source: text.trim(), all: false, terms };
}

/** `*` matches any run of characters (including none); everything else is literal. */
export function globMatch(pattern: string, value: string): boolean {
  if (!pattern.includes("*")) return pattern === value;
  const parts = pattern.split("*");
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (value.length < first.length + last.length || !value.startsWith(first) || !value.endsWith(last)) return false;
  // Middle parts in order, each as early as possible, between the fixed prefix and suffix.
  let at = first.length;
  const end = value.length - last.length;
  for (const mid of parts.slice(1, -1)) {
    const i = value.indexOf(mid, at);
    if (i < 0 || i + mid.length > end) return false;
    at = i + mid.length;
  }
  return true;
}

function lookup(t: SelectorTarget, key: string): string | undefined {
  if (key === "name") return t.name || undefined;
  if (key === "node_id") return t.node_id;
  if (key.startsWith("attr.")) {
    const a = key.slice(5);
    return Object.hasOwn(t.attributes, a) ? t.attributes[a] : undefined;
  }
  return Object.hasOwn(t.tags, key) ? t.tags[key] : undefined;
}

function termHolds(term: SelectorTerm, t: SelectorTarget): boolean {
  const v = lookup(t, term.key);
  switch (term.op) {
    case "exists":
      return v !== undefined;
    case "absent":
      return v === undefined;
    case "eq":
      return v !== undefined && globMatch(term.value, v);
    case "ne":
      return v === undefined || !globMatch(term.value, v);
    case "in":
      return v !== undefined && term.values.some((p) => globMatch(p, v));
    case "notin":
      return v === undefined || !term.values.some((p) => globMatch(p, v));
  }
}

export function matchSelector(sel: Selector, target: SelectorTarget): boolean {
  return sel.all || sel.terms.every((term) => termHolds(term, target));
}
