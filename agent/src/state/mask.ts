/** Lines shorter than this of a multi-line secret are not masked alone ("", "}", "--"), to keep diffs readable. */
const MIN_LINE = 4;

/**
 * Builds a function replacing every mask string with `***`. A multi-line secret is also masked
 * line by line, because a unified diff prefixes each of its lines with `+`/`-` and so never
 * contains it whole. Longest first, so a secret containing another is replaced entirely.
 */
export function masker(mask: readonly string[]): (s: string) => string {
  const needles = new Set<string>();
  for (const m of mask) {
    if (!m) continue;
    needles.add(m);
    if (m.includes("\n")) {
      for (const line of m.split(/\r?\n/)) if (line.trim().length >= MIN_LINE) needles.add(line);
    }
  }
  const sorted = [...needles].sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return (s) => s;
  return (s) => {
    let out = s;
    for (const n of sorted) if (out.includes(n)) out = out.split(n).join("***");
    return out;
  };
}

/** Masks every string inside a JSON value (observed state). */
export function maskJson(v: unknown, mask: (s: string) => string): unknown {
  if (typeof v === "string") return mask(v);
  if (Array.isArray(v)) return v.map((x) => maskJson(x, mask));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, maskJson(x, mask)]));
  return v;
}
