import t from "tap";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, AuditFeedSchema, StoredEventSchema } from "@orch/contracts";
import { encodeFeed } from "../src/feed.js";

// The hand-sized feed encoding equals what the generated encoder writes, at every length of varint.
t.test("events of 1- to 3-byte lengths and large seqs encode as the generated code does", async (t) => {
  const events = [0, 100, 200, 20_000, 300_000].map((n, i) =>
    create(AuditEventSchema, { id: `id${i}`, eventType: "t.x", summary: "s".repeat(n) }),
  );
  const stored = events.map((e, i) => ({ bytes: toBinary(AuditEventSchema, e), seq: [3, 1, 2 ** 40, 12345.5, 7][i]! }));
  const bytes = encodeFeed(stored);
  const expected = toBinary(
    AuditFeedSchema,
    create(AuditFeedSchema, {
      events: events.map((event, i) => create(StoredEventSchema, { event, seq: stored[i]!.seq })),
    }),
  );
  t.same(Buffer.from(bytes), Buffer.from(expected), "byte for byte");
  const feed = fromBinary(AuditFeedSchema, bytes);
  t.same(
    feed.events.map((s) => [s.seq, s.event?.summary.length]),
    stored.map((s, i) => [s.seq, [0, 100, 200, 20_000, 300_000][i]]),
  );
  t.equal(encodeFeed([]).length, 0, "no events, no bytes");
});
