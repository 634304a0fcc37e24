/** The integer flags of a bench (`--agents 500`), each with its default and its allowed range. */
import { parseArgs } from "node:util";

export interface IntOption {
  default: number;
  min: number;
  max: number;
}

/**
 * Parses argv (unknown flags throw, as parseArgs does); a value that is not an integer in its range
 * ends the bench with exit code 2 and `bench <name>: --<flag> must be an integer in min..max`.
 * `flags` are switches without a value (`--template-loop`): true when given.
 */
export function intOptions<K extends string, F extends string = never>(
  bench: string,
  spec: Record<K, IntOption>,
  flags: readonly F[] = [],
): Record<K, number> & Record<F, boolean> {
  const names = Object.keys(spec) as K[];
  const options: Record<string, { type: "string"; default: string } | { type: "boolean"; default: boolean }> = {};
  for (const k of names) options[k] = { type: "string", default: String(spec[k].default) };
  for (const f of flags) options[f] = { type: "boolean", default: false };
  const { values } = parseArgs({ options });
  const out = {} as Record<K, number> & Record<F, boolean>;
  for (const f of flags) (out as Record<F, boolean>)[f] = values[f] === true;
  for (const k of names) {
    const { min, max } = spec[k];
    const n = Number(values[k]);
    if (!Number.isInteger(n) || n < min || n > max) {
      console.error(`bench ${bench}: --${k} must be an integer in ${min}..${max}`);
      process.exit(2);
    }
    (out as Record<K, number>)[k] = n;
  }
  return out;
}
