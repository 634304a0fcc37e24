import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { z } from "zod";

/** Sections every service understands. Services extend this with their own section. */
export const baseConfigSchema = z.object({
  nats: z
    .object({
      url: z.string().default("nats://127.0.0.1:4222"),
      user: z.string().optional(),
      password: z.string().optional(),
      request_timeout_ms: z.number().int().positive().default(5000),
      audit_stream_replicas: z.number().int().min(1).max(5).default(1),
      audit_stream_max_age_days: z.number().int().min(1).default(30),
    })
    .prefault({}),
  database: z
    .object({
      url: z.string().default("postgres://postgres@127.0.0.1:5432/orch"),
      pool_max: z.number().int().positive().default(10),
      statement_timeout_ms: z.number().int().positive().default(15000),
    })
    .prefault({}),
  log: z
    .object({ level: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info") })
    .prefault({}),
  health: z
    .object({ port: z.number().int().min(0).max(65535).default(0), host: z.string().default("0.0.0.0") })
    .prefault({}),
});
export type BaseConfig = z.infer<typeof baseConfigSchema>;

/** Env aliases kept for the conventions operators already use. */
const ALIASES: Record<string, string[]> = {
  NATS_URL: ["nats", "url"],
  DATABASE_URL: ["database", "url"],
  ORCH_BOOTSTRAP_ADMIN_KEY: ["auth", "bootstrap_admin_key"],
};

/** The environment variable that sets `section.key`: ORCH_<SECTION>_<KEY>. */
export function configEnvName(section: string, key: string): string {
  return `ORCH_${section}_${key}`.toUpperCase();
}

/** A setting as messages name it: `notify.allow_private_targets (ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS)`. */
export function settingName(section: string, key: string): string {
  return `${section}.${key} (${configEnvName(section, key)})`;
}

function envValue(raw: string): unknown {
  // Numbers, booleans and null arrive as JSON; anything else is a plain string.
  try {
    const v: unknown = JSON.parse(raw);
    if (v === null || typeof v === "number" || typeof v === "boolean" || Array.isArray(v) || typeof v === "object")
      return v;
  } catch {
    /* plain string */
  }
  return raw;
}

function sectionKeys(schema: z.ZodObject): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [section, s] of Object.entries(schema.shape)) {
    let inner: unknown = s;
    // Unwrap defaults/optionals/prefaults to reach the section object.
    for (let i = 0; i < 5 && inner && typeof inner === "object" && !(inner instanceof z.ZodObject); i++) {
      const def = (inner as { def?: { innerType?: unknown } }).def;
      inner = def?.innerType;
    }
    if (inner instanceof z.ZodObject) for (const key of Object.keys(inner.shape)) out.push([section, key]);
  }
  return out;
}

/**
 * Reads `orch.yaml` (path in ORCH_CONFIG, optional) and overlays `ORCH_<SECTION>_<KEY>` env vars,
 * validates once with zod and freezes the result. Fails fast with every problem listed.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): Readonly<z.infer<S>> {
  let doc: Record<string, Record<string, unknown>> = {};
  const path = env.ORCH_CONFIG;
  if (path) {
    try {
      doc = (parseYaml(readFileSync(path, "utf8")) ?? {}) as typeof doc;
    } catch (err) {
      throw new Error(`config: cannot read ${path}: ${(err as Error).message}`);
    }
  }
  const set = (section: string, key: string, value: unknown) => {
    doc[section] = { ...(doc[section] ?? {}), [key]: value };
  };
  for (const [name, [section, key]] of Object.entries(ALIASES) as Array<[string, [string, string]]>) {
    if (env[name] !== undefined && env[name] !== "") set(section, key, env[name]);
  }
  for (const [section, key] of sectionKeys(schema)) {
    const name = configEnvName(section, key);
    const raw = env[name];
    if (raw !== undefined && raw !== "")
      set(section, key, key.endsWith("url") || key.endsWith("key") || key.endsWith("keys") ? raw : envValue(raw));
  }
  const parsed = schema.safeParse(doc);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new Error(`config: invalid configuration\n${lines.join("\n")}`);
  }
  return deepFreeze(parsed.data) as Readonly<z.infer<S>>;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === "object") {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
