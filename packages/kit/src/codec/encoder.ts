import { BAIL } from "./bail.js";
import type { FieldPlan, Kind, MsgPlan } from "./plan.js";
import { createStructWriter, type WriteStruct } from "./struct.js";
import { createWriter } from "./writer.js";

/** JS test for the zero value that implicit presence leaves out (after the type check). */
function isZeroSource(kind: Kind, v: string, enumZero: number): string {
  switch (kind) {
    case "string":
      return `${v} === ""`;
    case "bool":
      return `${v} === false`;
    case "bytes":
      return `${v}.byteLength === 0`;
    case "enum":
      return `${v} === ${enumZero}`;
    default:
      return `${v} === 0`;
  }
}

const TYPE_CHECK: Record<Kind, (v: string) => string> = {
  string: (v) => `typeof ${v} !== "string"`,
  bool: (v) => `typeof ${v} !== "boolean"`,
  bytes: (v) => `!(${v} instanceof Uint8Array)`,
  enum: (v) => `typeof ${v} !== "number"`,
  double: (v) => `typeof ${v} !== "number"`,
  float: (v) => `typeof ${v} !== "number"`,
  int32: (v) => `typeof ${v} !== "number"`,
  uint32: (v) => `typeof ${v} !== "number"`,
  sint32: (v) => `typeof ${v} !== "number"`,
  fixed32: (v) => `typeof ${v} !== "number"`,
  sfixed32: (v) => `typeof ${v} !== "number"`,
};

/**
 * Generates one encoder function per message type: property reads by constant name and no
 * per-field dispatch, which is what made a reflective walk over 50 operators slow.
 */
function generate(plan: MsgPlan, subs: MsgPlan[], tags: number[][]): string {
  const sub = (p: MsgPlan) => {
    let i = subs.indexOf(p);
    if (i < 0) i = subs.push(p) - 1;
    return `subs[${i}]`;
  };
  const bytes = (t: number[]) =>
    t.length === 1 ? `w.b(${t[0]});` : t.length === 2 ? `w.b2(${t[0]}, ${t[1]});` : `w.tag(tags[${tags.push(t) - 1}]);`;
  const tag = (f: FieldPlan) => bytes(f.tag);
  const out: string[] = [
    'if (typeof o !== "object" || o === null) throw BAIL;',
    "const u = o.$unknown;",
    "if (u !== undefined && u.length > 0) throw BAIL;",
    "let v, s;",
  ];
  for (const f of plan.fields) {
    const key = JSON.stringify(f.local);
    let body: string;
    switch (f.shape) {
      case "scalar": {
        const k = f.kind!;
        const write = `${tag(f)} w.${k}(v);`;
        body = f.implicit
          ? `if (${TYPE_CHECK[k]("v")}) throw BAIL; if (!(${isZeroSource(k, "v", f.enumZero)})) { ${write} }`
          : write;
        break;
      }
      case "message":
        body = `${tag(f)} s = w.open(); ${sub(f.sub!)}(v); w.close(s);`;
        break;
      case "struct":
        // protobuf-es takes any non-array object here; anything else it would mangle or reject.
        body = `if (typeof v !== "object" || Array.isArray(v)) throw BAIL; ${tag(f)} s = w.open(); struct(v); w.close(s);`;
        break;
      case "list":
        if (f.sub)
          body = `if (!Array.isArray(v)) throw BAIL; for (let i = 0; i < v.length; i++) { ${tag(f)} s = w.open(); ${sub(f.sub)}(v[i]); w.close(s); }`;
        else if (f.packed)
          body = `if (!Array.isArray(v)) throw BAIL; if (v.length > 0) { ${tag(f)} s = w.open(); for (let i = 0; i < v.length; i++) w.${f.kind}(v[i]); w.close(s); }`;
        else
          body = `if (!Array.isArray(v)) throw BAIL; for (let i = 0; i < v.length; i++) { ${tag(f)} w.${f.kind}(v[i]); }`;
        break;
      case "map": {
        const value = f.sub ? `const t = w.open(); ${sub(f.sub)}(x); w.close(t);` : `w.${f.kind}(x);`;
        body =
          `if (typeof v !== "object" || Array.isArray(v) || v instanceof Map) throw BAIL; ` +
          `for (const k of Object.keys(v)) { const x = v[k]; ${tag(f)} s = w.open(); w.b(10); w.string(k); ${bytes(f.valueTag)} ${value} w.close(s); }`;
        break;
      }
    }
    if (f.oneof !== undefined) {
      // Set only when the oneof selects this field; its value must then be present.
      out.push(
        `v = o[${JSON.stringify(f.oneof)}]; if (v != null && v.case === ${key}) { v = v.value; if (v == null) throw BAIL; ${body} }`,
      );
    } else {
      out.push(`v = o[${key}]; if (v != null) { ${body} }`);
    }
  }
  return out.join("\n");
}

type Encode = (o: unknown) => void;

/**
 * Encodes with functions generated per message type into one growing scratch buffer, and returns
 * a copy of the bytes. Throws BAIL for any value whose JS type protobuf-es would convert or
 * reject, so those keep protobuf-es' behaviour.
 */
export function createEncoder() {
  const { w, reset, take } = createWriter();
  const struct: WriteStruct = createStructWriter(w);
  const compiled = new Map<MsgPlan, Encode>();
  const fn = (plan: MsgPlan): Encode => {
    const have = compiled.get(plan);
    if (have) return have;
    const subs: MsgPlan[] = [];
    const tags: number[][] = [];
    const source = generate(plan, subs, tags);
    const subFns: Encode[] = [];
    let encode: Encode;
    try {
      encode = new Function("BAIL", "w", "subs", "tags", "struct", `return function encode(o) {\n${source}\n};`)(
        BAIL,
        w,
        subFns,
        tags,
        struct,
      ) as Encode;
    } catch {
      // Code generation disallowed (--disallow-code-generation-from-strings): protobuf-es it is.
      encode = () => {
        throw BAIL;
      };
    }
    // Registered before the nested types are compiled: recursive messages refer to themselves.
    compiled.set(plan, encode);
    for (const p of subs) subFns.push(fn(p));
    return encode;
  };
  return {
    /** The encoded bytes, or throws BAIL. */
    encode(plan: MsgPlan, value: unknown): Uint8Array {
      const encode = fn(plan);
      reset();
      encode(value);
      return take();
    },
  };
}
