import { getTextEncoding } from "@bufbuild/protobuf/wire";
import { BAIL } from "./bail.js";
import type { Reader } from "./wire.js";

/** The input of one decode and the scalar readers generated decoders call; throws BAIL on anything unusual. */
export function createReader() {
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
