import type { FieldPlan, Kind, MsgPlan } from "./plan.js";
import { BAIL } from "./bail.js";
import { createReader } from "./reader.js";
import { createStructReader, type ReadStruct } from "./struct.js";

function zeroOfValue(f: FieldPlan): string {
  switch (f.kind) {
    case "string":
      return '""';
    case "bool":
      return "false";
    case "bytes":
      return "new Uint8Array(0)";
    case "enum":
      return String(f.enumZero);
    default:
      return "0";
  }
}

const read = (k: Kind) => `r.${k}()`;

/**
 * Generates, per message type, a function that builds the same object protobuf-es' `fromBinary`
 * does (`$typeName`, the zero value of every implicit field and oneof, in declaration order; the
 * rest added as read). Anything unusual — an unknown field, an unexpected wire type, a repeated
 * singular message (protobuf-es merges it), truncated input — throws BAIL for protobuf-es to
 * handle (and report).
 */
function generate(plan: MsgPlan, subs: MsgPlan[]): { zero: string; decode: string } {
  const sub = (p: MsgPlan) => {
    let i = subs.indexOf(p);
    if (i < 0) i = subs.push(p) - 1;
    return i;
  };
  const zero = `return { $typeName: ${JSON.stringify(plan.typeName)}${plan.zeros.map((z) => `, ${JSON.stringify(z.key)}: ${z.source}`).join("")} };`;
  const cases: string[] = [];
  for (const f of plan.fields) {
    const key = `o[${JSON.stringify(f.local)}]`;
    const set = (value: string) =>
      f.oneof !== undefined
        ? `o[${JSON.stringify(f.oneof)}] = { case: ${JSON.stringify(f.local)}, value: ${value} };`
        : `${key} = ${value};`;
    switch (f.shape) {
      case "scalar":
        cases.push(`case ${f.tagValue}: ${set(read(f.kind!))} break;`);
        break;
      case "message": {
        const present =
          f.oneof !== undefined
            ? `o[${JSON.stringify(f.oneof)}].case === ${JSON.stringify(f.local)}`
            : `${key} !== undefined`;
        cases.push(`case ${f.tagValue}: if (${present}) throw BAIL; ${set(`dec[${sub(f.sub!)}](r.len())`)} break;`);
        break;
      }
      case "struct":
        // A second occurrence is merged by protobuf-es.
        cases.push(`case ${f.tagValue}: if (${key} !== undefined) throw BAIL; ${key} = struct(r.len()); break;`);
        break;
      case "list":
        if (f.sub) cases.push(`case ${f.tagValue}: ${key}.push(dec[${sub(f.sub)}](r.len())); break;`);
        else if (f.packed) {
          // protobuf-es takes packed and unpacked encodings alike.
          cases.push(
            `case ${f.tagValue}: { const e = r.len(); const a = ${key}; while (r.more(e)) a.push(${read(f.kind!)}); r.end(e); break; }`,
          );
          cases.push(`case ${f.unpackedTag}: ${key}.push(${read(f.kind!)}); break;`);
        } else cases.push(`case ${f.tagValue}: ${key}.push(${read(f.kind!)}); break;`);
        break;
      case "map": {
        const valueTag = f.valueTag[0]!;
        const value = f.sub ? `dec[${sub(f.sub)}](r.len())` : read(f.kind!);
        const missing = f.sub ? `zero[${sub(f.sub)}]()` : zeroOfValue(f);
        cases.push(
          `case ${f.tagValue}: { const e = r.len(); let k, x; ` +
            `while (r.more(e)) { const t = r.tag(); if (t === 10) k = r.string(); else if (t === ${valueTag}) x = ${value}; else throw BAIL; } ` +
            `r.end(e); ${key}[k === undefined ? "" : k] = x === undefined ? ${missing} : x; break; }`,
        );
        break;
      }
    }
  }
  const decode = [
    `const o = zero[${sub(plan)}]();`,
    "while (r.more(end)) {",
    "  switch (r.tag()) {",
    ...cases.map((c) => `    ${c}`),
    "    default: throw BAIL;",
    "  }",
    "}",
    "r.end(end);",
    "return o;",
  ].join("\n");
  return { zero, decode };
}

type Decode = (end: number) => Record<string, unknown>;

/** Reads messages with functions generated per message type; throws BAIL on anything unusual. */
export function createDecoder(protoKeysAsData = false) {
  const { r, start, done } = createReader();
  const struct: ReadStruct = createStructReader(r, protoKeysAsData);
  const compiled = new Map<MsgPlan, { decode: Decode; zero: () => Record<string, unknown> }>();
  const fns = (plan: MsgPlan) => {
    const have = compiled.get(plan);
    if (have) return have;
    const subs: MsgPlan[] = [];
    const src = generate(plan, subs);
    const dec: Decode[] = [];
    const zero: Array<() => Record<string, unknown>> = [];
    let entry: { decode: Decode; zero: () => Record<string, unknown> };
    try {
      entry = {
        zero: new Function(src.zero) as () => Record<string, unknown>,
        decode: new Function("BAIL", "r", "dec", "zero", "struct", `return function decode(end) {\n${src.decode}\n};`)(
          BAIL,
          r,
          dec,
          zero,
          struct,
        ) as Decode,
      };
    } catch {
      // Code generation disallowed (--disallow-code-generation-from-strings): protobuf-es it is.
      const bail = () => {
        throw BAIL;
      };
      entry = { zero: bail, decode: bail };
    }
    // Registered before the nested types are compiled: recursive messages refer to themselves.
    compiled.set(plan, entry);
    for (const p of subs) {
      const e = fns(p);
      dec.push(e.decode);
      zero.push(e.zero);
    }
    return entry;
  };
  return {
    /** The decoded message, or throws BAIL. */
    decode(plan: MsgPlan, data: Uint8Array): unknown {
      const { decode } = fns(plan);
      const end = start(data);
      try {
        return decode(end);
      } finally {
        done();
      }
    },
  };
}
