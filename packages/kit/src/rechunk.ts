/**
 * A byte stream re-cut into pieces of exactly `size` bytes (the last one shorter): blob uploads
 * and blob stores move fixed-size chunks whatever sizes the source yields, holding at most one.
 */
export async function* chunked(body: AsyncIterable<Uint8Array | string>, size: number): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let held = 0;
  for await (const piece of body) {
    let buf =
      typeof piece === "string" ? Buffer.from(piece) : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    while (held + buf.length >= size) {
      const take = size - held;
      parts.push(buf.subarray(0, take));
      yield Buffer.concat(parts, size);
      buf = buf.subarray(take);
      parts = [];
      held = 0;
    }
    if (buf.length) {
      parts.push(buf);
      held += buf.length;
    }
  }
  if (held) yield Buffer.concat(parts, held);
}
