import { BAIL } from "./bail.js";
import type { Reader, Writer } from "./wire.js";

/**
 * google.protobuf.Struct fields, which protobuf-es represents as plain JSON objects (JsonObject)
 * everywhere except inside google.protobuf.Value. protobuf-es converts such an object to Struct,
 * Value and ListValue messages and walks them reflectively, and back again on decode; this writes
 * and reads the JSON directly, with the same bytes and the same objects.
 *
 * Wire layout (fixed by struct.proto): Struct { map<string, Value> fields = 1 },
 * Value { oneof kind: null_value = 1, number_value = 2, string_value = 3, bool_value = 4,
 * struct_value = 5, list_value = 6 }, ListValue { repeated Value values = 1 }.
 */

const FIELDS = 0x0a; // Struct.fields, ListValue.values and a map entry's key: field 1, length-delimited.
const ENTRY_VALUE = 0x12;
const NULL_VALUE = 0x08;
const NUMBER_VALUE = 0x11;
const STRING_VALUE = 0x1a;
const BOOL_VALUE = 0x20;
const STRUCT_VALUE = 0x2a;
const LIST_VALUE = 0x32;

/**
 * Deeper nesting goes to protobuf-es, so that a cyclic or absurdly deep value fails (or not)
 * exactly as it does there, rather than on this stack.
 */
const MAX_DEPTH = 100;

/**
 * Keys protobuf-es cannot hold: it builds Struct.fields as a plain object, where assigning
 * "__proto__" replaces the prototype instead of adding an entry.
 */
const PROTO_KEY = "__proto__";

export type WriteStruct = (obj: object) => void;
export type ReadStruct = (end: number) => Record<string, unknown>;

/** Writes the body of a Struct from a JSON object; throws BAIL for anything that is not JSON. */
export function createStructWriter(w: Writer): WriteStruct {
  const struct = (obj: object, depth: number): void => {
    if (depth > MAX_DEPTH) throw BAIL;
    const o = obj as Record<string, unknown>;
    // Object.keys is the order protobuf-es' Object.entries walk writes the map entries in.
    for (const k of Object.keys(o)) {
      if (k === PROTO_KEY) throw BAIL;
      const x = o[k];
      w.b(FIELDS);
      const entry = w.open();
      w.b(FIELDS);
      w.string(k);
      w.b(ENTRY_VALUE);
      const s = w.open();
      value(x, depth);
      w.close(s);
      w.close(entry);
    }
  };
  const value = (x: unknown, depth: number): void => {
    switch (typeof x) {
      case "number":
        w.b(NUMBER_VALUE);
        w.double(x);
        return;
      case "string":
        w.b(STRING_VALUE);
        w.string(x);
        return;
      case "boolean":
        w.b2(BOOL_VALUE, x ? 1 : 0);
        return;
      case "object": {
        if (x === null) {
          w.b2(NULL_VALUE, 0);
          return;
        }
        if (Array.isArray(x)) {
          if (depth >= MAX_DEPTH) throw BAIL;
          w.b(LIST_VALUE);
          const s = w.open();
          for (let i = 0; i < x.length; i++) {
            w.b(FIELDS);
            const t = w.open();
            value(x[i], depth + 1);
            w.close(t);
          }
          w.close(s);
          return;
        }
        w.b(STRUCT_VALUE);
        const s = w.open();
        struct(x, depth + 1);
        w.close(s);
        return;
      }
      default:
        // undefined, bigint, functions, symbols: protobuf-es writes an empty Value for them.
        throw BAIL;
    }
  };
  return (obj) => struct(obj, 0);
}

/**
 * Reads the body of a Struct into a JSON object. Throws BAIL for unknown fields, a Value with
 * more than one kind (protobuf-es replaces or merges), and malformed input; and for a "__proto__"
 * key unless `protoKeysAsData` (then it is an own key, as JSON.parse makes it).
 */
export function createStructReader(r: Reader, protoKeysAsData = false): ReadStruct {
  const struct = (end: number, depth: number): Record<string, unknown> => {
    if (depth > MAX_DEPTH) throw BAIL;
    const o: Record<string, unknown> = {};
    while (r.more(end)) {
      if (r.tag() !== FIELDS) throw BAIL;
      const e = r.len();
      // A missing key is "" and a missing value an empty Value, which is null.
      let k = "";
      let x: unknown = null;
      while (r.more(e)) {
        const t = r.tag();
        if (t === FIELDS) k = r.string();
        else if (t === ENTRY_VALUE) x = value(r.len(), depth);
        else throw BAIL;
      }
      r.end(e);
      if (k !== PROTO_KEY) o[k] = x;
      else if (protoKeysAsData)
        Object.defineProperty(o, k, { value: x, enumerable: true, writable: true, configurable: true });
      else throw BAIL;
    }
    r.end(end);
    return o;
  };
  const value = (end: number, depth: number): unknown => {
    let x: unknown = null;
    let kinds = 0;
    while (r.more(end)) {
      if (++kinds > 1) throw BAIL;
      switch (r.tag()) {
        case NULL_VALUE:
          r.int32();
          x = null;
          break;
        case NUMBER_VALUE:
          x = r.double();
          break;
        case STRING_VALUE:
          x = r.string();
          break;
        case BOOL_VALUE:
          x = r.bool();
          break;
        case STRUCT_VALUE:
          x = struct(r.len(), depth + 1);
          break;
        case LIST_VALUE:
          x = list(r.len(), depth + 1);
          break;
        default:
          throw BAIL;
      }
    }
    r.end(end);
    return x;
  };
  const list = (end: number, depth: number): unknown[] => {
    if (depth > MAX_DEPTH) throw BAIL;
    const a: unknown[] = [];
    while (r.more(end)) {
      if (r.tag() !== FIELDS) throw BAIL;
      a.push(value(r.len(), depth));
    }
    r.end(end);
    return a;
  };
  return (end) => struct(end, 0);
}
