/** Thrown inside the fast path to hand the value back to protobuf-es. */
export const BAIL: unique symbol = Symbol("bail");
