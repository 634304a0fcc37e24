import { absPath, onlyKeys, optStr, state } from "../spec.js";
import { SpecError, type Provider, type Spec } from "../types.js";
import {
  desireMissing,
  insertIndex,
  joinLines,
  placement,
  splitLines,
  textProvider,
  type Current,
  type Desired,
  type Placement,
} from "./text-edit.js";

const FIELDS = ["path", "content", "marker", "state", "insert_after", "insert_before", "create"];
export const DEFAULT_MARKER = "# {mark} ORCH MANAGED BLOCK";

interface Want extends Placement {
  path: string;
  body: string[];
  begin: string;
  end: string;
  state: "present" | "absent";
}

function parse(spec: Spec): Want {
  onlyKeys(spec, FIELDS);
  const st = state(spec, ["present", "absent"] as const, "present");
  const content = optStr(spec, "content");
  if (st === "present" && content === undefined)
    throw new SpecError(`field "content" is required unless state is absent`);
  const marker = optStr(spec, "marker") ?? DEFAULT_MARKER;
  if (!marker.includes("{mark}")) throw new SpecError(`field "marker" must contain {mark} (replaced by BEGIN and END)`);
  if (/[\r\n]/.test(marker)) throw new SpecError(`field "marker" must be one line`);
  const begin = marker.replace("{mark}", "BEGIN");
  const end = marker.replace("{mark}", "END");
  // One final newline ends the block's last line; it is not an extra empty line.
  const body = content === undefined || content === "" ? [] : splitLines(content).lines;
  if (body.some((l) => l === begin || l === end))
    throw new SpecError(`field "content" must not contain the marker lines ("${begin}" / "${end}")`);
  return { path: absPath(spec), body, begin, end, state: st, ...placement(spec) };
}

/**
 * Like Ansible's blockinfile: the lines between the BEGIN and END markers are the block. A
 * re-apply replaces what is between them (so an edited block is restored); absent removes the
 * block with its markers. Half a marker pair is refused rather than guessed at.
 */
function desire(w: Want, cur: Current): Desired {
  const block = [w.begin, ...w.body, w.end];
  if (cur.text === null) return desireMissing(w, "the block", block);
  const file = splitLines(cur.text);
  const { lines } = file;
  const b = lines.indexOf(w.begin);
  const e = b >= 0 ? lines.indexOf(w.end, b + 1) : -1;
  if (b >= 0 !== e >= 0 || (b < 0 && lines.includes(w.end)))
    return {
      next: cur.text,
      blocked: `${w.path} has an unmatched marker line ("${w.begin}" / "${w.end}"): fix it by hand`,
    };
  if (w.state === "absent") {
    if (b < 0) return { next: cur.text };
    lines.splice(b, e - b + 1);
    return { next: joinLines(file) };
  }
  if (b >= 0) {
    const same = e - b + 1 === block.length && block.every((l, i) => lines[b + i] === l);
    if (same) return { next: cur.text };
    lines.splice(b, e - b + 1, ...block);
    return { next: joinLines(file) };
  }
  const i = insertIndex(lines, w.after, w.before);
  lines.splice(i, 0, ...block);
  return { next: joinLines({ lines, eol: file.eol || i + block.length === lines.length }) };
}

export function blockProvider(): Provider {
  return textProvider(parse, desire);
}
