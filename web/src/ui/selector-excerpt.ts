/**
 * The part of a selector around a parse error, split at the offending character, so the input's
 * error can point at it. Pure: unit-tested.
 */
export interface SelectorExcerpt {
  before: string;
  /** The character at the error, or "" when the error is at the end of the text. */
  at: string;
  after: string;
  /** Text was cut off before / after the excerpt. */
  clippedStart: boolean;
  clippedEnd: boolean;
}

export function selectorExcerpt(text: string, position: number, radius = 24): SelectorExcerpt {
  const pos = Math.min(Math.max(0, Math.trunc(position) || 0), text.length);
  const start = Math.max(0, pos - radius);
  const end = Math.min(text.length, pos + 1 + radius);
  return {
    before: text.slice(start, pos),
    at: text.slice(pos, pos + 1),
    after: text.slice(pos + 1, end),
    clippedStart: start > 0,
    clippedEnd: end < text.length,
  };
}
