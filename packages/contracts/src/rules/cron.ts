/**
 * The `cron` resource type: the entry's file name and its schedule grammar. The state service's
 * module schema checks them at upload and the agent checks the rendered values again, so both
 * import these rules. Messages are predicates ("must be …") read after the field's name.
 */

/** run-parts (which cron uses for /etc/cron.d) silently ignores any other file name. */
export const CRON_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;
export const CRON_NAME_RULE = "1-64 characters of A-Z, a-z, 0-9, '_' or '-' (cron ignores other file names)";

/** The user field of a cron.d line: a POSIX-ish account name (no spaces, it is a column). */
export const CRON_USER_RE = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$/;
export const CRON_USER_RULE = "must be a user name (letters, digits, '_', '.', '-'; at most 32 characters)";

/** Variables written as NAME=value lines in the cron file. */
export const CRON_ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const CRON_MACROS = [
  "@reboot",
  "@yearly",
  "@annually",
  "@monthly",
  "@weekly",
  "@daily",
  "@midnight",
  "@hourly",
] as const;

interface CronField {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

export const CRON_FIELDS: readonly CronField[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day-of-month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTHS },
  // 7 is Sunday as well as 0, as every cron accepts.
  { name: "day-of-week", min: 0, max: 7, names: DAYS },
];

const FIVE_FIELDS = `must be 5 fields (minute hour day-of-month month day-of-week) or one of ${CRON_MACROS.join(", ")}`;

/** A number or (month/day-of-week) a three-letter name, as its number; a message when invalid. */
function value(f: CronField, s: string): number | string {
  if (/^\d{1,2}$/.test(s)) {
    const n = Number(s);
    return n >= f.min && n <= f.max ? n : `${f.name} ${s} is out of range ${f.min}-${f.max}`;
  }
  const i = f.names?.indexOf(s.toLowerCase()) ?? -1;
  if (i >= 0) return f.names === MONTHS ? i + 1 : i;
  return f.names
    ? `${f.name} '${s}' is not a number ${f.min}-${f.max} or a name (${f.names[0]}…${f.names[f.names.length - 1]})`
    : `${f.name} '${s}' is not a number ${f.min}-${f.max}`;
}

/** One comma-separated item: `*`, `a`, `a-b`, `*\/n`, `a-b/n`. */
function item(f: CronField, s: string): string | null {
  const [range, step, extra] = s.split("/");
  if (extra !== undefined) return `${f.name} item '${s}' has more than one '/'`;
  if (step !== undefined) {
    if (!/^\d{1,2}$/.test(step) || Number(step) < 1 || Number(step) > f.max - f.min + 1)
      return `${f.name} step '${step}' must be a number 1-${f.max - f.min + 1}`;
    if (range !== "*" && !range!.includes("-")) return `${f.name} step '/${step}' must follow '*' or a range a-b`;
  }
  if (range === "*") return null;
  const bounds = range!.split("-");
  if (bounds.length > 2 || bounds.some((b) => b === "")) return `${f.name} item '${s}' is not a value or a range a-b`;
  const nums: number[] = [];
  for (const b of bounds) {
    const v = value(f, b);
    if (typeof v === "string") return v;
    nums.push(v);
  }
  if (nums.length === 2 && nums[0]! > nums[1]!) return `${f.name} range '${range}' must not run backwards`;
  return null;
}

/**
 * A cron.d schedule: a macro, or 5 whitespace-separated fields each a comma list of `*`, numbers
 * in range, ranges `a-b`, steps `*\/n` / `a-b/n`, and month/day names (any case) wherever a
 * number may stand. Null when valid, else a message naming the bad field.
 */
export function checkCronSchedule(schedule: string): string | null {
  const s = schedule.trim();
  if (s.startsWith("@"))
    return (CRON_MACROS as readonly string[]).includes(s) ? null : `'${s}' is not one of ${CRON_MACROS.join(", ")}`;
  if (/[\r\n]/.test(s)) return "must be one line";
  const fields = s.split(/[ \t]+/);
  if (fields.length !== 5) return FIVE_FIELDS;
  for (const [i, f] of CRON_FIELDS.entries()) {
    const list = fields[i]!;
    for (const part of list.split(",")) {
      if (part === "") return `${f.name} field '${list}' has an empty list item`;
      const bad = item(f, part);
      if (bad) return bad;
    }
  }
  return null;
}
