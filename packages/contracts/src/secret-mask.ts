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

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** RFC 4648 base32 (upper case, `=` padding), as `base32` prints it. */
function base32(bytes: Buffer): string {
  let out = "";
  let bits = 0;
  let acc = 0;
  for (const byte of bytes) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32[(acc << (5 - bits)) & 31];
  return out + "=".repeat((8 - (out.length % 8)) % 8);
}

const rot13 = (s: string) =>
  s.replace(/[A-Za-z]/g, (c) => {
    const base = c <= "Z" ? 65 : 97;
    return String.fromCharCode(((c.charCodeAt(0) - base + 13) % 26) + base);
  });

/**
 * Every form of one secret value that output is redacted against: the value, and (from
 * MIN_VARIANT_CHARS on) base64 and base64url with and without padding (also unaligned, see
 * stableBase64), hex in lower and upper case, URL-encoding (upper- and lower-case escapes, `+` for
 * space as in forms), the value reversed, in upper and lower case and in rot13, and base32 (upper and
 * lower case, padded or not). The lines of a multi-line value are masked alone too, because a
 * unified diff prefixes each with `+`/`-`. Anything else (compression, a hash, the value split up
 * or interleaved) is not caught: redaction is for accidents (docs/secrets.md).
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
  out.add(value.toUpperCase());
  out.add(value.toLowerCase());
  out.add(rot13(value));
  const b32 = base32(bytes);
  for (const form of [b32, b32.replace(/=+$/, "")]) {
    out.add(form);
    out.add(form.toLowerCase());
  }
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
