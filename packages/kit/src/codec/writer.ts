import { BAIL } from "./bail.js";
import type { Writer } from "./wire.js";

const FLOAT32_MAX = 3.4028234663852886e38;
const isInt32 = (v: unknown): v is number =>
  typeof v === "number" && Number.isInteger(v) && v <= 0x7fffffff && v >= -0x80000000;
const isUint32 = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v <= 0xffffffff && v >= 0;

/**
 * A negative int32 or enum, sign-extended to ten bytes as protobuf requires, at `pos` (with room
 * for ten bytes); returns the position after it.
 */
function putNegativeInt32(buf: Buffer, pos: number, v: number): number {
  let lo = v >>> 0;
  for (let i = 0; i < 4; i++) {
    buf[pos++] = (lo & 0x7f) | 0x80;
    lo >>>= 7;
  }
  // The last 4 bits of the low word, then the high word, which is all ones.
  buf[pos++] = (lo & 0x0f) | 0xf0;
  for (let i = 0; i < 4; i++) buf[pos++] = 0xff;
  buf[pos++] = 0x01;
  return pos;
}

/**
 * A string shorter than 128 UTF-16 units that is all ASCII, with its one-byte length, at `pos`
 * (with room for 1 + length bytes): copied in JS, cheaper than a native call for ids, names and
 * keys. False, with nothing that counts written, for any other string.
 */
function putShortAscii(buf: Buffer, pos: number, v: string, len: number): boolean {
  for (let i = 0; i < len; i++) {
    const c = v.charCodeAt(i);
    if (c >= 0x80) return false;
    buf[pos + 1 + i] = c;
  }
  buf[pos] = len;
  return true;
}

/** `v` as an unsigned varint at `pos` (with room for five bytes); returns the position after it. */
function putVarint32(buf: Buffer, pos: number, v: number): number {
  v >>>= 0;
  while (v > 0x7f) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[pos++] = v;
  return pos;
}

/** A buffer of at least `need` bytes holding the first `used` bytes of `buf`: twice the size, or more. */
function grown(buf: Buffer, used: number, need: number): Buffer<ArrayBuffer> {
  const next = Buffer.allocUnsafe(Math.max(buf.length * 2, need));
  buf.copy(next, 0, 0, used);
  return next;
}

/** The scratch buffer generated encoders write into, reused from one encode to the next. */
export function createWriter() {
  let buf = Buffer.allocUnsafe(16 * 1024);
  let pos = 0;

  const ensure = (n: number) => {
    if (pos + n > buf.length) buf = grown(buf, pos, pos + n);
  };
  /** Room for `n` bytes of a fixed-width value; returns where they go. */
  const fixed = (n: number): number => {
    ensure(n);
    const at = pos;
    pos += n;
    return at;
  };
  const varint32 = (v: number) => {
    ensure(5);
    pos = putVarint32(buf, pos, v);
  };
  const int32 = (v: unknown) => {
    if (!isInt32(v)) throw BAIL;
    if (v >= 0) return varint32(v);
    ensure(10);
    pos = putNegativeInt32(buf, pos, v);
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
      pos = putVarint32(buf, start - 1, len) + len;
    },
    string(v) {
      if (typeof v !== "string") throw BAIL;
      const len = v.length;
      if (len < 128) {
        ensure(1 + len);
        if (putShortAscii(buf, pos, v, len)) {
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
      const at = fixed(8);
      buf.writeDoubleLE(v, at);
    },
    float(v) {
      if (typeof v !== "number" || (Number.isFinite(v) && (v > FLOAT32_MAX || v < -FLOAT32_MAX))) throw BAIL;
      const at = fixed(4);
      buf.writeFloatLE(v, at);
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
      const at = fixed(4);
      buf.writeUInt32LE(v, at);
    },
    sfixed32(v) {
      if (!isInt32(v)) throw BAIL;
      const at = fixed(4);
      buf.writeInt32LE(v, at);
    },
    bytes(v) {
      if (!(v instanceof Uint8Array)) throw BAIL;
      varint32(v.byteLength);
      const at = fixed(v.byteLength);
      buf.set(v, at);
    },
  };
  return {
    w,
    reset: () => void (pos = 0),
    /** A copy: the caller may keep the bytes while the scratch buffer is reused. */
    take: () => Buffer.from(buf.subarray(0, pos)),
  };
}
