// The one masking rule for secret values in operation output, imported by the agent (first line)
// and the state service (second line, before anything is stored).

/** What a secret (or any of its forms) is replaced with. */
export const SECRET_MASK = "***";

/**
 * Values shorter than this are masked only as written, not in encoded or reversed forms: the
 * encodings of a 3-character value ("abc" → "YWJj", "cba") occur by chance in ordinary output, and
 * masking them would destroy it while protecting almost nothing.
 */
export const MIN_VARIANT_CHARS = 6;

/** Lines shorter than this of a multi-line secret are not masked alone ("", "}", "--"): diffs stay readable. */
const MIN_LINE = 4;

/**
 * The characters of base64(prefix ‖ value ‖ suffix) that depend on the value alone, for a value
 * starting `offset` bytes into a 3-byte group: a secret encoded inside a longer text
 * (`printf 'x%s' "$S" | base64`) contains one of the three, whatever surrounds it.
 */
function stableBase64(bytes: Buffer, offset: number, encoding: "base64" | "base64url"): string {
  const enc = Buffer.concat([Buffer.alloc(offset), bytes])
    .toString(encoding)
    .replace(/=+$/, "");
  const firstBit = 8 * offset;
  const endBit = 8 * (offset + bytes.length);
  const from = Math.ceil(firstBit / 6);
  const to = Math.floor(endBit / 6); // char i covers bits [6i, 6i + 6)
  return enc.slice(from, to);
}

/**
 * Every form of one secret value that output is redacted against: the value, and (from
 * MIN_VARIANT_CHARS on) base64 and base64url with and without padding (also unaligned, see
 * stableBase64), hex in lower and upper case, URL-encoding (upper- and lower-case escapes, `+` for
 * space as in forms) and the value reversed. The lines of a multi-line value are masked alone too,
 * because a unified diff prefixes each with `+`/`-`.
 */
export function secretVariants(value: string): string[] {
  if (!value) return [];
  const out = new Set<string>([value]);
  if (value.includes("\n")) for (const line of value.split(/\r?\n/)) if (line.trim().length >= MIN_LINE) out.add(line);
  if ([...value].length < MIN_VARIANT_CHARS) return [...out];
  const bytes = Buffer.from(value, "utf8");
  for (const encoding of ["base64", "base64url"] as const) {
    const full = bytes.toString(encoding);
    out.add(full);
    out.add(full.replace(/=+$/, ""));
    for (const offset of [0, 1, 2]) {
      const core = stableBase64(bytes, offset, encoding);
      if (core.length >= MIN_VARIANT_CHARS) out.add(core);
    }
  }
  const hex = bytes.toString("hex");
  out.add(hex);
  out.add(hex.toUpperCase());
  const url = encodeURIComponent(value);
  out.add(url);
  out.add(url.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()));
  out.add(url.replace(/%20/g, "+"));
  out.add([...value].reverse().join(""));
  return [...out];
}

/**
 * A function replacing every form of every secret with SECRET_MASK. Longest first, so a form
 * containing another (padded base64, a value containing a shorter secret) is replaced entirely.
 */
export function secretMasker(values: Iterable<string>): (s: string) => string {
  const needles = new Set<string>();
  for (const v of values) for (const n of secretVariants(v)) needles.add(n);
  const sorted = [...needles].sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return (s) => s;
  return (s) => {
    let out = s;
    for (const n of sorted) if (out.includes(n)) out = out.split(n).join(SECRET_MASK);
    return out;
  };
}
