/**
 * Length of the incomplete UTF-8 sequence at the end of `b` (0 when it ends on a boundary). Only a
 * lead byte that still lacks continuation bytes counts: invalid bytes are passed on as they are,
 * never held, so non-UTF-8 output is not delayed.
 */
export function incompleteTail(b: Uint8Array): number {
  for (let i = b.length - 1; i >= 0 && i >= b.length - 3; i--) {
    const c = b[i]!;
    if ((c & 0xc0) === 0x80) continue; // continuation: look for its lead
    const need = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 1;
    return b.length - i < need ? b.length - i : 0;
  }
  return 0;
}

/**
 * Where to cut `b` near `max` without splitting a sequence: backs off over at most three
 * continuation bytes to their lead (forward past them when that lead is the first byte, i.e. `max`
 * is smaller than one character); bytes that are not UTF-8 are cut anywhere.
 */
export function cutPoint(b: Uint8Array, max: number): number {
  if (b.length <= max) return b.length;
  const boundary = (i: number) => i >= b.length || (b[i]! & 0xc0) !== 0x80;
  for (let i = max; i > 0 && i >= max - 3; i--) if (boundary(i)) return i;
  for (let i = max + 1; i <= max + 3; i++) if (boundary(i)) return i;
  return max;
}
