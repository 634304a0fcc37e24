import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";

/**
 * Per-message-type plans for the bus codec, compiled once from the descriptors. Only proto3
 * shapes that the codec reproduces exactly get a plan; everything else stays with protobuf-es.
 */

export type Kind =
  | "string"
  | "bool"
  | "double"
  | "float"
  | "int32"
  | "uint32"
  | "sint32"
  | "fixed32"
  | "sfixed32"
  | "bytes"
  | "enum";

export interface FieldPlan {
  no: number;
  local: string;
  /** The oneof's local name when the field is a oneof member. */
  oneof: string | undefined;
  /** "struct": a google.protobuf.Struct field, which protobuf-es holds as a plain JSON object. */
  shape: "scalar" | "message" | "list" | "map" | "struct";
  /** Scalar kind of the value (list item, map value); undefined for messages and structs. */
  kind: Kind | undefined;
  /** Wire type of one occurrence on the wire (2 for packed lists, messages, maps). */
  wire: number;
  /** The tag as it is on the wire, and as bytes. */
  tagValue: number;
  tag: number[];
  /** A packed list also accepts its items one by one, under this tag. */
  unpackedTag: number | undefined;
  /** Leave out the zero value (proto3 implicit presence). */
  implicit: boolean;
  enumZero: number;
  packed: boolean;
  sub: MsgPlan | undefined;
  /** Tag of the value (field 2) inside a map entry. */
  valueTag: number[];
}

export interface MsgPlan {
  typeName: string;
  /** In field-number order, the order protobuf-es writes them in. */
  fields: FieldPlan[];
  /** What protobuf-es puts on a fresh message, in declaration order: key and JS source. */
  zeros: Array<{ key: string; source: string }>;
}

const PROTO3 = 999;
const IMPLICIT = 2;

const KIND: Partial<Record<ScalarType, Kind>> = {
  [ScalarType.STRING]: "string",
  [ScalarType.BOOL]: "bool",
  [ScalarType.DOUBLE]: "double",
  [ScalarType.FLOAT]: "float",
  [ScalarType.INT32]: "int32",
  [ScalarType.UINT32]: "uint32",
  [ScalarType.SINT32]: "sint32",
  [ScalarType.FIXED32]: "fixed32",
  [ScalarType.SFIXED32]: "sfixed32",
  [ScalarType.BYTES]: "bytes",
};

export function wireType(kind: Kind | undefined): number {
  switch (kind) {
    case undefined: // message
    case "string":
    case "bytes":
      return 2;
    case "double":
      return 1;
    case "float":
    case "fixed32":
    case "sfixed32":
      return 5;
    default:
      return 0;
  }
}

export function varintBytes(v: number): number[] {
  const out: number[] = [];
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

export const tagBytes = (no: number, wt: number) => varintBytes(((no << 3) | wt) >>> 0);

const valueKind = (f: DescField): Kind | undefined => {
  if (
    f.fieldKind === "enum" ||
    (f.fieldKind === "list" && f.listKind === "enum") ||
    (f.fieldKind === "map" && f.mapKind === "enum")
  )
    return "enum";
  if (
    f.fieldKind === "message" ||
    (f.fieldKind === "list" && f.listKind === "message") ||
    (f.fieldKind === "map" && f.mapKind === "message")
  )
    return undefined;
  return KIND[f.scalar ?? ScalarType.INT32];
};

const fieldMessage = (f: DescField): DescMessage | undefined =>
  f.fieldKind === "message" ||
  (f.fieldKind === "list" && f.listKind === "message") ||
  (f.fieldKind === "map" && f.mapKind === "message")
    ? f.message
    : undefined;

/**
 * A singular google.protobuf.Struct field: protobuf-es gives it as a JsonObject, which the codec
 * writes and reads directly. Repeated, map and oneof Structs (unused so far) stay with protobuf-es,
 * as do the other well-known types.
 */
const isJsonStruct = (f: DescField): boolean =>
  f.fieldKind === "message" &&
  !f.oneof &&
  !f.delimitedEncoding &&
  f.message.typeName === "google.protobuf.Struct" &&
  f.parent.typeName !== "google.protobuf.Value";

/** Whether every type reachable from `desc` has shapes the codec handles. */
function supported(desc: DescMessage, seen: Set<DescMessage>): boolean {
  if (seen.has(desc)) return true;
  seen.add(desc);
  if (desc.file.edition !== PROTO3 || desc.typeName.startsWith("google.protobuf.")) return false;
  for (const f of desc.fields) {
    if (isJsonStruct(f)) continue;
    if ((f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message")) && f.delimitedEncoding)
      return false;
    if (f.fieldKind === "map" && f.mapKey !== ScalarType.STRING) return false;
    if (f.fieldKind === "enum" && !f.enum.open) return false;
    const sub = fieldMessage(f);
    if (sub) {
      if (!supported(sub, seen)) return false;
    } else if (!valueKind(f)) return false;
  }
  return true;
}

const enumOf = (f: DescField) =>
  f.fieldKind === "enum" ||
  (f.fieldKind === "list" && f.listKind === "enum") ||
  (f.fieldKind === "map" && f.mapKind === "enum")
    ? f.enum
    : undefined;

/** Source text of a field's zero value (a fresh object for lists, maps and bytes). */
function zeroSource(f: DescField): string {
  switch (f.fieldKind) {
    case "list":
      return "[]";
    case "map":
      return "{}";
    case "enum":
      return String(f.enum.values[0]?.number ?? 0);
    default:
      switch (f.scalar) {
        case ScalarType.STRING:
          return '""';
        case ScalarType.BOOL:
          return "false";
        case ScalarType.BYTES:
          return "new Uint8Array(0)";
        default:
          return "0";
      }
  }
}

function build(desc: DescMessage, plans: Map<DescMessage, MsgPlan | null>): MsgPlan {
  const existing = plans.get(desc);
  if (existing) return existing;
  const plan: MsgPlan = { typeName: desc.typeName, fields: [], zeros: [] };
  // Registered before the fields so that recursive types terminate.
  plans.set(desc, plan);
  for (const m of desc.members) {
    if (m.kind === "oneof") plan.zeros.push({ key: m.localName, source: "{ case: undefined }" });
    else if (m.presence === IMPLICIT && m.fieldKind !== "message")
      plan.zeros.push({ key: m.localName, source: zeroSource(m) });
  }
  for (const f of [...desc.fields].sort((a, b) => a.number - b.number)) {
    const struct = isJsonStruct(f);
    const kind = valueKind(f);
    const sub = struct ? undefined : fieldMessage(f);
    const shape = struct ? "struct" : f.fieldKind === "enum" ? "scalar" : f.fieldKind;
    const packed = f.fieldKind === "list" && f.packed && kind !== undefined && kind !== "string" && kind !== "bytes";
    const wire = shape === "scalar" || (shape === "list" && !packed) ? wireType(kind) : 2;
    const fp: FieldPlan = {
      no: f.number,
      local: f.localName,
      oneof: f.oneof?.localName,
      shape,
      kind,
      wire,
      tagValue: ((f.number << 3) | wire) >>> 0,
      tag: tagBytes(f.number, wire),
      unpackedTag: packed ? ((f.number << 3) | wireType(kind)) >>> 0 : undefined,
      implicit: f.presence === IMPLICIT && !f.oneof,
      enumZero: kind === "enum" ? (enumOf(f)?.values[0]?.number ?? 0) : 0,
      packed,
      sub: sub ? build(sub, plans) : undefined,
      valueTag: tagBytes(2, wireType(kind)),
    };
    plan.fields.push(fp);
  }
  return plan;
}

/** A plan cache; `get` returns null for types that must go through protobuf-es. */
export function createPlans() {
  const plans = new Map<DescMessage, MsgPlan | null>();
  return {
    get(desc: DescMessage): MsgPlan | null {
      const p = plans.get(desc);
      if (p !== undefined) return p;
      if (!supported(desc, new Set())) {
        plans.set(desc, null);
        return null;
      }
      return build(desc, plans);
    },
  };
}
export type Plans = ReturnType<typeof createPlans>;
