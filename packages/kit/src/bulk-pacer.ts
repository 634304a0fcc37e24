import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

type Collect = (options: { type: "minor" | "major"; execution: "sync" | "async" }) => void;

let collect: Collect | null | undefined;

/** V8's collector as a function (its `gc` extension, enabled at run time); null where refused. */
function collector(): Collect | null {
  if (collect !== undefined) return collect;
  try {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as unknown;
    collect = typeof gc === "function" ? (gc as Collect) : null;
  } catch {
    collect = null;
  }
  return collect;
}

/** How far buffer memory may grow past its last low before a bulk transfer collects. */
export const BULK_BUFFER_BUDGET = 16 * 1024 * 1024;
/** Bulk bytes moved between two looks at buffer memory (a look costs about a microsecond). */
const LOOK_EVERY = 256 * 1024;
/**
 * Pieces smaller than this are not bulk data: a fan-out's requests and answers (a few KiB each)
 * pass through the same RPCs and relay, and while 200 of them are in flight a young collection
 * copies their live work instead of freeing dead buffers. Pacing them doubled the agents service's
 * CPU per operation in `npm run bench -- fanout` (plan 0.17 → 0.33 ms).
 */
export const BULK_MIN_PIECE = 64 * 1024;

/** What the pacer has seen; one per process (pacerState), a fresh one per unit test. */
export interface PacerState {
  /** The lowest buffer memory seen since the last collection. */
  low: number;
  /** The lowest buffer memory seen since the last full collection. */
  base: number;
}

export const newPacerState = (): PacerState => ({ low: Number.POSITIVE_INFINITY, base: Number.POSITIVE_INFINITY });

/**
 * One look: which collection, if any, `now` bytes of buffer memory call for. Buffers a young
 * collection could not free (they were in flight during two of them, so V8 moved them to the old
 * generation) raise the low it leaves behind; once that low has risen two budgets past the last full
 * collection's, the next collection is a full one.
 */
export function pace(s: PacerState, now: number, budget = BULK_BUFFER_BUDGET): "minor" | "major" | undefined {
  s.low = Math.min(s.low, now);
  s.base = Math.min(s.base, now);
  if (now - s.low < budget) return undefined;
  const kind = s.low - s.base >= 2 * budget ? "major" : "minor";
  s.low = Number.POSITIVE_INFINITY;
  if (kind === "major") s.base = Number.POSITIVE_INFINITY;
  return kind;
}

const pacerState = newPacerState();
let pacing = false;
/** Bulk bytes moved since the last look. */
let moved = 0;

/**
 * Turns pacing on for this process (its main does it, like countBuffersInHeapLimit): the gateway,
 * which streams uploads to the state service, and the agents service, which relays blob chunks to
 * agents. Elsewhere bulkMoved does nothing: the state service's garbage is mostly its own heap (rows
 * read from Postgres), which V8's own schedule collects well.
 */
export function paceBulkTransfers(): void {
  pacing = true;
}

/**
 * Tells the process that a piece of `bytes` (a blob chunk, a relayed payload) went through it;
 * pieces under BULK_MIN_PIECE are not counted.
 * Each copy of such data on its way (socket reads, NATS's growing read buffers, protobuf frames,
 * gRPC framing: ~7 bytes for each byte the agents service relays) is an ArrayBuffer that dies
 * within milliseconds; but V8 frees dead ArrayBuffers only when it collects, and it starts a
 * collection only once they near its heap limit (~130 MB of them in the agents service while a
 * 500 MiB blob went to 20 agents). A young-generation collection every BULK_BUFFER_BUDGET of growth
 * frees them while they are young, for a millisecond or two, in place of most of V8's full
 * collections; the agents service's CPU stayed within the bench's noise (docs/performance.md).
 */
export function bulkMoved(bytes: number): void {
  if (!pacing || bytes < BULK_MIN_PIECE) return;
  moved += bytes;
  if (moved < LOOK_EVERY) return;
  moved = 0;
  const kind = pace(pacerState, getHeapStatistics().external_memory);
  if (kind) collector()?.({ type: kind, execution: "sync" });
}
