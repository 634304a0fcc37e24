import { checkChannelName, type NotifyService } from "@orch/contracts";
import { conflict, invalid, notFound, type Handlers, type Queryable, isUniqueViolation } from "@orch/kit";
import { channelsDb, type ChannelRow } from "../db/channels.js";

export type ChannelHandlers = Pick<
  Handlers<typeof NotifyService>,
  "createChannel" | "listChannels" | "getChannel" | "updateChannel" | "deleteChannel" | "testChannel" | "listDeliveries"
>;

export const checkName = (name: string) => {
  const bad = checkChannelName(name);
  if (bad) throw invalid(bad.reason, `name ${bad.message}`, { field: "name" });
};
// Events carry the filter, not the config: URLs may embed tokens.
export const filterOf = (pub: Record<string, unknown>) => ({
  min_severity: (pub.min_severity as string | undefined) ?? "warning",
  event_types: (pub.event_types as string[] | undefined) ?? [],
});
export const ref = (c: { id: string; name: string }) => ({ id: c.id, name: c.name, type: "channel" });

export async function find(db: Queryable, id: string, forUpdate = false): Promise<ChannelRow> {
  const row = await channelsDb.byIdOrName(db, id, forUpdate);
  if (!row) throw notFound("channel_not_found", `no channel '${id}'`);
  return row;
}

export function nameTaken(err: unknown, name: string): never {
  if (isUniqueViolation(err))
    throw conflict("channel_exists", `a channel named '${name}' already exists`, { field: "name" });
  throw err;
}
