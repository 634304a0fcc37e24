// Counts people read — CLI output and the summaries services write into audit events — agree
// with their number in one way: "1 resource differs", "2 resources differ".

/** The word that agrees with a count: (1, "differs", "differ") → "differs", (2, ...) → "differ". */
export function agree(n: number, one: string, many = `${one}s`): string {
  return n === 1 ? one : many;
}

/** (1, "module") → "1 module", (2, "module") → "2 modules". */
export function count(n: number, noun: string, plural?: string): string {
  return `${n} ${agree(n, noun, plural)}`;
}
