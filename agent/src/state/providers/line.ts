import { absPath, onlyKeys, optStr, state } from "../spec.js";
import { SpecError, type Provider, type Spec } from "../types.js";
import {
  desireMissing,
  insertIndex,
  joinLines,
  placement,
  regexpField,
  splitLines,
  textProvider,
  type Current,
  type Desired,
  type Placement,
} from "./text-edit.js";

const FIELDS = ["path", "line", "match", "state", "insert_after", "insert_before", "create"];

interface Want extends Placement {
  path: string;
  line: string | undefined;
  match: RegExp | undefined;
  state: "present" | "absent";
}

function parse(spec: Spec): Want {
  onlyKeys(spec, FIELDS);
  const line = optStr(spec, "line");
  if (line !== undefined && /[\r\n]/.test(line)) throw new SpecError(`field "line" must be one line`);
  const st = state(spec, ["present", "absent"] as const, "present");
  const match = regexpField("match", optStr(spec, "match"));
  if (st === "present" && line === undefined) throw new SpecError(`field "line" is required unless state is absent`);
  if (st === "absent" && line === undefined && match === undefined)
    throw new SpecError(`state absent needs field "match" or "line"`);
  return { path: absPath(spec), line, match, state: st, ...placement(spec) };
}

/**
 * Like Ansible's lineinfile. present: the last line matching `match` is replaced by `line`; with
 * no match (or no `match`) a file already holding `line` is left alone, otherwise `line` is
 * inserted (insert_after / insert_before, else at the end). absent: every line matching `match`
 * (or equal to `line`) is removed.
 */
function desire(w: Want, cur: Current): Desired {
  if (cur.text === null) return desireMissing(w, "the line", [w.line!]);
  const file = splitLines(cur.text);
  const { lines } = file;
  if (w.state === "absent") {
    const keep = lines.filter((l) => (w.match ? !w.match.test(l) : l !== w.line));
    return { next: keep.length === lines.length ? cur.text : joinLines({ lines: keep, eol: file.eol }) };
  }
  const line = w.line!;
  let at = -1;
  if (w.match) for (let i = lines.length - 1; i >= 0 && at < 0; i--) if (w.match.test(lines[i]!)) at = i;
  if (at >= 0) {
    if (lines[at] === line) return { next: cur.text };
    lines[at] = line;
    return { next: joinLines(file) };
  }
  if (lines.includes(line)) return { next: cur.text };
  const i = insertIndex(lines, w.after, w.before);
  lines.splice(i, 0, line);
  // A line appended to a file without a final newline must not run into the previous last line.
  return { next: joinLines({ lines, eol: file.eol || i === lines.length - 1 }) };
}

export function lineProvider(): Provider {
  return textProvider(parse, desire);
}
