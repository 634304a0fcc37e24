import { BAIL } from "./bail.js";
import type { FieldPlan, Kind, MsgPlan } from "./plan.js";
import { createStructWriter, type WriteStruct } from "./struct.js";

export { BAIL };

const FLOAT32_MAX = 3.4028234663852886e38;
const isInt32 = (v: unknown): v is number =>
  typeof v === "number" && Number.isInteger(v) && v <= 0x7fffffff && v >= -0x80000000;
const isUint32 = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v <= 0xffffffff && v >= 0;

/** What generated encoders call: a growing scratch buffer and one writer per scalar kind. */
export interface Writer {
  /** Writes a one- or two-byte tag, or any tag. */
  b(b0: number): void;
  b2(b0: number, b1: number): void;
  tag(bytes: number[]): void;
  /** Opens a length-delimited body; returns where it starts. */
  open(): number;
  close(start: number): void;
  string(v: unknown): void;
  bool(v: unknown): void;
  double(v: unknown): void;
  float(v: unknown): void;
  int32(v: unknown): void;
  enum(v: unknown): void;
  uint32(v: unknown): void;
  sint32(v: unknown): void;
  fixed32(v: unknown): void;
  sfixed32(v: unknown): void;
  bytes(v: unknown): void;
}

function createWriter() {
  let buf = Buffer.allocUnsafe(16 * 1024);
  let pos = 0;

  const ensure = (n: number) => {
    if (pos + n <= buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + n));
    buf.copy(next, 0, 0, pos);
    buf = next;
  };
  const varint32 = (v: number) => {
    ensure(5);
    v >>>= 0;
    while (v > 0x7f) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[pos++] = v;
  };
  // int32 and enum: negative values are sign-extended to ten bytes, as protobuf requires.
  const int32 = (v: unknown) => {
    if (!isInt32(v)) throw BAIL;
    if (v >= 0) return varint32(v);
    ensure(10);
    let lo = v >>> 0;
    for (let i = 0; i < 4; i++) {
      buf[pos++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    // The last 4 bits of the low word, then the high word, which is all ones.
    buf[pos++] = (lo & 0x0f) | 0xf0;
    for (let i = 0; i < 4; i++) buf[pos++] = 0xff;
    buf[pos++] = 0x01;
  };

  const w: Writer = {
    b(b0) {
      ensure(1);
      buf[pos++] = b0;
    },
    b2(b0, b1) {
      ensure(2);
      buf[pos++] = b0;
      buf[pos++] = b1;
    },
    tag(bytes) {
      ensure(bytes.length);
      for (let i = 0; i < bytes.length; i++) buf[pos++] = bytes[i]!;
    },
    open() {
      ensure(1);
      return ++pos;
    },
    // The length goes in the byte reserved by open(); a longer one moves the body along.
    close(start) {
      const len = pos - start;
      if (len < 128) {
        buf[start - 1] = len;
        return;
      }
      const extra = len < 0x4000 ? 1 : len < 0x200000 ? 2 : len < 0x10000000 ? 3 : 4;
      ensure(extra);
      buf.copy(buf, start + extra, start, pos);
      pos = start - 1;
      varint32(len);
      pos += len;
    },
    string(v) {
      if (typeof v !== "string") throw BAIL;
      const len = v.length;
      // Short ASCII strings (ids, names, keys) are copied in JS: cheaper than a native call each.
      if (len < 128) {
        ensure(1 + len);
        let i = 0;
        for (; i < len; i++) {
          const c = v.charCodeAt(i);
          if (c >= 0x80) break;
          buf[pos + 1 + i] = c;
        }
        if (i === len) {
          buf[pos] = len;
          pos += 1 + len;
          return;
        }
      }
      const n = Buffer.byteLength(v, "utf8");
      varint32(n);
      ensure(n);
      pos += buf.write(v, pos, "utf8");
    },
    bool(v) {
      if (typeof v !== "boolean") throw BAIL;
      ensure(1);
      buf[pos++] = v ? 1 : 0;
    },
    double(v) {
      if (typeof v !== "number") throw BAIL;
      ensure(8);
      buf.writeDoubleLE(v, pos);
      pos += 8;
    },
    float(v) {
      if (typeof v !== "number" || (Number.isFinite(v) && (v > FLOAT32_MAX || v < -FLOAT32_MAX))) throw BAIL;
      ensure(4);
      buf.writeFloatLE(v, pos);
      pos += 4;
    },
    int32,
    enum: int32,
    uint32(v) {
      if (!isUint32(v)) throw BAIL;
      varint32(v);
    },
    sint32(v) {
      if (!isInt32(v)) throw BAIL;
      varint32(((v << 1) ^ (v >> 31)) >>> 0);
    },
    fixed32(v) {
      if (!isUint32(v)) throw BAIL;
      ensure(4);
      buf.writeUInt32LE(v, pos);
      pos += 4;
    },
    sfixed32(v) {
      if (!isInt32(v)) throw BAIL;
      ensure(4);
      buf.writeInt32LE(v, pos);
      pos += 4;
    },
    bytes(v) {
      if (!(v instanceof Uint8Array)) throw BAIL;
      varint32(v.byteLength);
      ensure(v.byteLength);
      buf.set(v, pos);
      pos += v.byteLength;
    },
  };
  return {
    w,
    reset: () => void (pos = 0),
    /** A copy: the caller may keep the bytes while the scratch buffer is reused. */
    take: () => Buffer.from(buf.subarray(0, pos)),
  };
}

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
