/**
 * RFC 3339 text of a time in ms, exactly as `new Date(ms).toISOString()`. Every timestamp of every
 * list the API returns goes through here, and the native call costs several times a JS format of
 * the time of day: the date part is formatted natively once per day and kept.
 */
const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00Z: from there on toISOString writes a six-digit signed year. */
const YEAR_10000_MS = 253_402_300_800_000;
/** A list spans few days; a bound keeps a scan of old records from growing the map without end. */
const MAX_DAYS = 256;
const dayPrefixes = new Map<number, string>();

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

export function iso(ms: number): string {
  // Negative, fractional, huge or invalid values keep the native behaviour (and its RangeError).
  if (!Number.isInteger(ms) || ms < 0 || ms >= YEAR_10000_MS) return new Date(ms).toISOString();
  const inDay = ms % DAY_MS;
  const day = ms - inDay;
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size >= MAX_DAYS) dayPrefixes.clear();
    prefix = new Date(day).toISOString().slice(0, 11); // "YYYY-MM-DDT"
    dayPrefixes.set(day, prefix);
  }
  const s = Math.floor(inDay / 1000);
  return `${prefix}${pad2(Math.floor(s / 3600))}:${pad2(Math.floor(s / 60) % 60)}:${pad2(s % 60)}.${pad3(inDay % 1000)}Z`;
}
