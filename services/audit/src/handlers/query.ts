import type { AuditService } from "@orch/contracts";
import { keysetPage, invalid, pageLimit, type Handlers } from "@orch/kit";
import { storedEvent, toEvent } from "../convert.js";
import { eventsDb } from "../db/events.js";
import { parseCursor, parseFilter } from "../validate.js";
import type { AuditDeps } from "../deps.js";

type QueryHandlers = Pick<Handlers<typeof AuditService>, "listEvents" | "tail">;

const TAIL_PAGE = 500;

export function queryHandlers(deps: AuditDeps): QueryHandlers {
  const { pool } = deps;
  return {
    async listEvents(req) {
      const filter = parseFilter(req.filter);
      const cursor = parseCursor("cursor", req.cursor);
      const limit = pageLimit(req.limit);
      const rows = await eventsDb.page(pool, filter, cursor, limit);
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      return { events: page.map(toEvent), nextCursor };
    },

    async tail(req) {
      const filter = parseFilter(req.filter);
      const limit = pageLimit(req.limit, TAIL_PAGE);
      let position: number;
      if (req.afterSeq !== undefined) {
        if (!Number.isInteger(req.afterSeq) || req.afterSeq < 0)
          throw invalid("invalid_cursor", "after_seq must be a storage position", { parameter: "after_seq" });
        position = req.afterSeq;
      } else {
        const after = parseCursor("cursor", req.afterId);
        // Without a starting point the tail starts now.
        if (after === undefined) return { events: [], position: await eventsDb.head(pool), hasMore: false };
        position = await eventsDb.seqOf(pool, after);
      }
      const { head, rows } = await eventsDb.tail(pool, filter, position, limit + 1);
      const page = rows.slice(0, limit);
      const hasMore = rows.length > limit;
      return {
        events: page.map(storedEvent),
        position: hasMore ? page.at(-1)!.seq : Math.max(position, head),
        hasMore,
      };
    },
  };
}
