import type { StateService } from "@orch/contracts";
import { conflict, isUniqueViolation, type Handlers } from "@orch/kit";
import { sourceMsg } from "../convert.js";
import { sourcesDb } from "../db/sources.js";
import type { Engine } from "../engine/index.js";
import { sourceRef } from "../sources/actor.js";
import { requireBox, type SourceBox } from "../sources/seal.js";
import { checkCreateSource } from "../validate.js";
import { viewSource } from "./source-view.js";

type H = Handlers<typeof StateService>;

export const createSource =
  ({ deps }: Engine, box: SourceBox | undefined): H["createSource"] =>
  async (req, ctx) => {
    const { pool, events, clock, config } = deps;
    const input = checkCreateSource(req, config.state);
    const sealer = requireBox(box);
    const now = clock.now();
    try {
      await events.tx(async (db, emit) => {
        await sourcesDb.insert(db, {
          name: input.name,
          url: input.url,
          branch: input.branch,
          path: input.path,
          interval_s: input.interval_s,
          auth_kind: input.auth_kind,
          auth_sealed: input.auth ? sealer.sealAuth(input.name, input.auth) : null,
          webhook_sealed: sealer.sealWebhook(input.name, input.webhook_secret),
          status: "pending",
          commit: "",
          synced_at: 0,
          attempted_at: 0,
          attempted_commit: "",
          // Due at once: the next tick of the scheduler makes the first sync.
          next_sync_at: now,
          failures: 0,
          error: "",
          errors: [],
          created_at: now,
          created_by: ctx.actor.id,
        });
        await emit({
          type: "source.created",
          summary: `git source ${input.name} (${input.url} ${input.branch}) created by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: sourceRef(input.name),
          metadata: {
            url: input.url,
            branch: input.branch,
            path: input.path,
            interval_s: input.interval_s,
            auth: input.auth_kind,
            webhook_secret: input.generated_secret ? "generated" : "given",
          },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw conflict("source_exists", `a git source named '${input.name}' already exists`, { field: "name" });
      throw err;
    }
    return { source: sourceMsg(await viewSource(pool, input.name)), webhookSecret: input.webhook_secret };
  };
