import { z } from "zod";
import { CHANNEL_NAME_RE, checkChannelName } from "@orch/contracts";
import { ruled } from "../schemas.js";

export const ChannelId = z.object({ id: z.string().min(1).max(128) });
export const Name = ruled(checkChannelName, CHANNEL_NAME_RE);
export const Config = z.record(z.string(), z.unknown());
