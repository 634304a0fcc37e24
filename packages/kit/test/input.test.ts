import t from "tap";
import { create, toBinary } from "@bufbuild/protobuf";
import { CreateChannelRequestSchema } from "@orch/contracts";
import { createMessageCodec } from "../src/codec/index.js";
import { findInvalidString, invalidCharacter, rejectInvalidStrings } from "../src/input.js";
import type { OrchError } from "../src/errors.js";

// The rule behind `invalid_characters` (pure logic: no bus needed to check the walk itself).
t.test("which strings are refused", async (t) => {
  t.equal(invalidCharacter("plain ✓ text 😀"), undefined, "paired surrogates (emoji) are fine");
  t.equal(invalidCharacter("a\u0000b"), "nul");
  t.equal(invalidCharacter("x\ud800"), "surrogate", "lone high surrogate");
  t.equal(invalidCharacter("\udc00x"), "surrogate", "lone low surrogate");
  t.equal(invalidCharacter("\ud83d\ude00\udc00"), "surrogate", "a low surrogate after a complete pair");
});

t.test("the walk covers values, keys, arrays and nesting, and skips bytes", async (t) => {
  t.same(findInvalidString({ a: [{ b: "ok" }, { c: "x\u0000" }] }), { field: "a.1.c", problem: "nul" });
  t.same(findInvalidString({ "k\u0000": 1 }), { field: "k\u0000", problem: "nul" });
  t.same(findInvalidString("\u0000"), { field: "(root)", problem: "nul" });
  t.equal(findInvalidString({ data: new Uint8Array([0, 0, 0]), $typeName: "x.Y" }), undefined, "bytes are data");
  let deep: unknown = "\u0000";
  for (let i = 0; i < 200_000; i++) deep = [deep];
  t.equal(findInvalidString(deep)?.problem, "nul", "200,000 levels: no stack overflow");
});

t.test("a decoded protobuf message: Struct values inside are found", async (t) => {
  const codec = createMessageCodec();
  const msg = create(CreateChannelRequestSchema, {
    name: "c",
    channelType: "webhook",
    config: { h: { "x-a": "v\u0000" } },
  });
  const decoded = codec.decode(CreateChannelRequestSchema, toBinary(CreateChannelRequestSchema, msg));
  const err = t.throws(() => rejectInvalidStrings(decoded)) as OrchError;
  t.equal(err.code, "INVALID_ARGUMENT");
  t.equal(err.reason, "invalid_characters");
  t.equal(err.details.field, "config.h.x-a");
  t.notMatch(err.message, /\u0000/, "the message names the field, not the value");
});
