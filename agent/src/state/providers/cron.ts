import { stat } from "node:fs/promises";
import { join } from "node:path";
import {
  CRON_ENV_KEY_RE,
  CRON_NAME_RE,
  CRON_NAME_RULE,
  CRON_USER_RE,
  CRON_USER_RULE,
  checkCronSchedule,
} from "@orch/contracts";
import { onlyKeys, optStr, optStrMap, state, str } from "../spec.js";
import { SpecError, UnsupportedError, type Provider, type Spec } from "../types.js";
import { managedHeader } from "./owned-files.js";
import { applyText, checkText } from "./text-edit.js";

const FIELDS = ["name", "schedule", "command", "user", "env", "state"];
export const DEFAULT_CRON_DIR = "/etc/cron.d";
/** cron ignores a cron.d file that group or others may write. */
const CRON_FILE_MODE = 0o644;
export const CRON_HEADER = managedHeader("cron");

interface Want {
  path: string;
  state: "present" | "absent";
  content: string;
}

const oneLine = (key: string, v: string) => {
  if (/[\r\n]/.test(v)) throw new SpecError(`field "${key}" must be one line`);
  return v;
};

function parse(spec: Spec, dir: string): Want {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  if (!CRON_NAME_RE.test(name)) throw new SpecError(`field "name" must be ${CRON_NAME_RULE}`);
  const st = state(spec, ["present", "absent"] as const, "present");
  const path = join(dir, name);
  if (st === "absent") return { path, state: st, content: "" };
  // The grammar is the module schema's (packages/contracts), checked again on the rendered value.
  const schedule = str(spec, "schedule").trim();
  const bad = checkCronSchedule(schedule);
  if (bad) throw new SpecError(`field "schedule" ${bad.startsWith("must") ? bad : `is invalid: ${bad}`}`);
  const command = oneLine("command", str(spec, "command"));
  const user = optStr(spec, "user") ?? "root";
  if (!CRON_USER_RE.test(user)) throw new SpecError(`field "user" ${CRON_USER_RULE}`);
  const env = optStrMap(spec, "env") ?? {};
  const envLines = Object.entries(env).map(([k, v]) => {
    if (!CRON_ENV_KEY_RE.test(k)) throw new SpecError(`field "env.${k}" must be an environment variable name`);
    return `${k}=${oneLine(`env.${k}`, v)}`;
  });
  return { path, state: st, content: [CRON_HEADER, ...envLines, `${schedule} ${user} ${command}`, ""].join("\n") };
}

async function requireDir(dir: string): Promise<void> {
  const st = await stat(dir).catch(() => null);
  if (!st?.isDirectory()) throw new UnsupportedError(`${dir} does not exist (is cron installed?)`);
}

/** A whole file `<cron dir>/<name>` with a managed header, mode 0644; absent removes it. */
export function cronProvider(opts: { dir?: string | undefined } = {}): Provider {
  const dir = opts.dir ?? DEFAULT_CRON_DIR;
  return {
    async check(spec) {
      const w = parse(spec, dir);
      await requireDir(dir);
      return checkText(w.path, () =>
        w.state === "absent" ? { next: null } : { next: w.content, mode: CRON_FILE_MODE },
      );
    },
    async apply(spec) {
      const w = parse(spec, dir);
      await requireDir(dir);
      return applyText(w.path, () =>
        w.state === "absent" ? { next: null } : { next: w.content, mode: CRON_FILE_MODE },
      );
    },
  };
}
