import { OrchError } from "@orch/kit";

/**
 * Deepest JSON nesting a request body may have. No API body needs more than a handful of levels;
 * everything downstream (zod, the bus encoders, Struct conversion) recurses per level, so a body
 * of 100,000 `[` would otherwise overflow a stack far from here.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Depth of the deepest object/array in JSON text, stopping as soon as it passes `limit`. One pass
 * over the characters and no recursion: strings are skipped so brackets inside them do not count.
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Fatal: a body that is not UTF-8 is refused, never decoded with U+FFFD in place of the bad bytes
 * (a secret value would be stored changed, without an error). ignoreBOM keeps a BOM in the text, so
 * JSON.parse refuses it as before (invalid_json).
 */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Parses a request body: empty → undefined, not UTF-8 → 400 invalid_encoding, too deep → 400
 * too_deep, invalid → 400 invalid_json.
 */
export function parseJsonBody(body: Buffer, maxDepth = MAX_JSON_DEPTH): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new OrchError("INVALID_ARGUMENT", "invalid_encoding", "the request body is not valid UTF-8");
  }
  if (text.trim() === "") return undefined;
  if (jsonDepthExceeds(text, maxDepth)) {
    const message = `the request body is nested deeper than ${maxDepth} levels`;
    throw new OrchError("INVALID_ARGUMENT", "too_deep", message, { max_depth: maxDepth });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new OrchError("INVALID_ARGUMENT", "invalid_json", "the request body is not valid JSON");
  }
}
