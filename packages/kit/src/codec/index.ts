import { create, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { BAIL } from "./bail.js";
import { createEncoder } from "./encoder.js";
import { createDecoder } from "./decoder.js";
import { createPlans } from "./plan.js";

/**
 * Protobuf binary encoding for the bus hot path. protobuf-es' reflective `create` + `toBinary`
 * allocate a small array per field and a Uint8Array per string, and `fromBinary` walks
 * reflection per field: a page of 50 operators cost several times the database query behind it.
 * This codec works from plans compiled once per message type and gives the same bytes and the
 * same objects. Types or values it does not handle exactly go through protobuf-es unchanged
 * (and so keep its validation and its errors).
 */
export interface MessageCodec {
  /** Same bytes as `toBinary(desc, create(desc, value))`. */
  encode(desc: DescMessage, value: unknown): Uint8Array;
  /** Same message as `fromBinary(desc, data)`. */
  decode(desc: DescMessage, data: Uint8Array): unknown;
}

export interface MessageCodecOptions {
  /**
   * Decodes a google.protobuf.Struct key "__proto__" as an own key. protobuf-es makes it the
   * prototype of the object it builds, so by default such input is left to protobuf-es; a reader
   * that keeps the JSON as sent (the audit store) sets this.
   */
  protoKeysAsData?: boolean;
}

/** One per server or client: it owns a scratch buffer that encodes reuse. */
export function createMessageCodec(options: MessageCodecOptions = {}): MessageCodec {
  const plans = createPlans();
  const encoder = createEncoder();
  const decoder = createDecoder(options.protoKeysAsData);
  return {
    encode(desc, value) {
      const plan = plans.get(desc);
      if (plan) {
        try {
          return encoder.encode(plan, value);
        } catch (err) {
          if (err !== BAIL) throw err;
        }
      }
      return toBinary(desc, create(desc, value as never));
    },
    decode(desc, data) {
      const plan = plans.get(desc);
      if (plan) {
        try {
          return decoder.decode(plan, data);
        } catch (err) {
          if (err !== BAIL) throw err;
        }
      }
      return fromBinary(desc, data);
    },
  };
}
