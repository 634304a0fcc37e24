import { getTextEncoding } from "@bufbuild/protobuf/wire";
import type { FieldPlan, Kind, MsgPlan } from "./plan.js";
import { BAIL } from "./bail.js";
import { createStructReader, type ReadStruct } from "./struct.js";

/** What generated decoders call: the input and one reader per scalar kind. */
export interface Reader {
  more(end: number): boolean;
  /** Throws BAIL unless exactly at `end` (a field ran past its message). */
  end(end: number): void;
  tag(): number;
  /** Reads a length; returns where that body ends. */
  len(): number;
  string(): string;
  bool(): boolean;
  double(): number;
  float(): number;
  int32(): number;
  enum(): number;
  uint32(): number;
  sint32(): number;
  fixed32(): number;
  sfixed32(): number;
  bytes(): Uint8Array;
}

function createReader() {
  const utf8 = getTextEncoding();
  const empty = Buffer.alloc(0);
  let buf: Buffer = empty;
  /** The caller's bytes: `bytes` fields are views of them, as with protobuf-es. */
  let input: Uint8Array = empty;
  let pos = 0;

  // Same result as protobuf-es' varint32read, including its sign quirk for long encodings.
  const varint32 = (): number => {
    let b = buf[pos++]!;
    let result = b & 0x7f;
    if ((b & 0x80) === 0) return result;
    b = buf[pos++]!;
    result |= (b & 0x7f) << 7;
    if ((b & 0x80) === 0) return result;
    b = buf[pos++]!;
    result |= (b & 0x7f) << 14;
    if ((b & 0x80) === 0) return result;
    b = buf[pos++]!;
    result |= (b & 0x7f) << 21;
    if ((b & 0x80) === 0) return result;
    b = buf[pos++]!;
    result |= (b & 0x0f) << 28;
    for (let n = 5; (b & 0x80) !== 0 && n < 10; n++) b = buf[pos++]!;
    if ((b & 0x80) !== 0) throw BAIL;
    return result >>> 0;
  };
  const fixed = (n: number): number => {
    const at = pos;
    pos += n;
    if (pos > buf.length) throw BAIL;
    return at;
  };

  const r: Reader = {
    more: (end) => pos < end,
    end(end) {
      if (pos !== end) throw BAIL;
    },
    tag: varint32,
    len() {
      const end = varint32() + pos;
      if (end > buf.length) throw BAIL;
      return end;
    },
    string() {
      const b = buf;
      const start = pos;
      const len = b[start]!;
      // One-byte lengths (short strings) read inline; longer ones through the varint reader.
      const end = len < 0x80 ? start + 1 + len : r.len();
      if (end > b.length) throw BAIL;
      const from = len < 0x80 ? start + 1 : pos;
      pos = end;
      // ASCII (ids, names, keys) decodes the same under any UTF-8 decoder; the rest goes through
      // protobuf-es' own decoder so that invalid sequences come out identically. Short ASCII
      // (Struct keys above all) is built in JS: a native slice per string costs more.
      if (end - from <= 16) {
        let out = "";
        for (let i = from; i < end; i++) {
          const c = b[i]!;
          if (c >= 0x80) return utf8.decodeUtf8(b.subarray(from, end));
          out += String.fromCharCode(c);
        }
        return out;
      }
      for (let i = from; i < end; i++) if (b[i]! >= 0x80) return utf8.decodeUtf8(b.subarray(from, end));
      return (b as unknown as { latin1Slice(s: number, e: number): string }).latin1Slice(from, end);
    },
    // Encoders write booleans as one byte; anything longer is left to protobuf-es.
    bool() {
      const b = buf[pos++];
      if (b !== 0 && b !== 1) throw BAIL;
      return b === 1;
    },
    double: () => buf.readDoubleLE(fixed(8)),
    float: () => buf.readFloatLE(fixed(4)),
    int32: () => varint32() | 0,
    enum: () => varint32() | 0,
    uint32: varint32,
    sint32() {
      const z = varint32();
      return (z >>> 1) ^ -(z & 1);
    },
    fixed32: () => buf.readUInt32LE(fixed(4)),
    sfixed32: () => buf.readInt32LE(fixed(4)),
    bytes() {
      const end = r.len();
      const start = pos;
      pos = end;
      return input.subarray(start, end);
    },
  };
  return {
    r,
    start(data: Uint8Array) {
      input = data;
      buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      pos = 0;
      return buf.length;
    },
    done() {
      buf = empty;
      input = empty;
    },
  };
}

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
export function createDecoder() {
  const { r, start, done } = createReader();
  const struct: ReadStruct = createStructReader(r);
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
