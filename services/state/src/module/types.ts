import { z } from "zod";
import {
  BLOB_DIGEST,
  BUNDLE_REF_RULE,
  isBundleRef,
  type BundleFile,
  ARMORED_PUBLIC_KEY_RE,
  ARMORED_PUBLIC_KEY_RULE,
  CRON_ENV_KEY_RE,
  CRON_NAME_RE,
  CRON_NAME_RULE,
  CRON_USER_RE,
  CRON_USER_RULE,
  checkCronSchedule,
  isSystemdUnitName,
  NAME_RE,
  NAME_RULE,
  REPOSITORY_NAME_RE,
  REPOSITORY_NAME_RULE,
  SYSCTL_NAME_RE,
  SYSCTL_NAME_RULE,
  SYSTEMD_UNIT_RULE,
} from "@orch/contracts";
import type { ParameterDecl } from "./parameters.js";
import { refsIn, TEMPLATE_MARK } from "./template.js";

export type { ParameterDecl };

/**
 * Schema v1 of a module's resources, one zod object per type. The field lists match the agent's
 * providers (agent/src/state/providers): a field the agent would refuse is refused at upload,
 * with its YAML line, instead of failing later on every agent.
 */

/** A string holding a template expression: typed fields may be rendered per agent. */
const templated = z.string().refine((s) => s.includes(TEMPLATE_MARK), "must be a literal value or a {{ template }}");
const text = z.string();
const nonEmpty = z.string().min(1, "must not be empty");
/** A literal `..` segment is refused here; the agent refuses one a template renders. */
const noDotDot = (s: string) => !s.split("/").includes("..");
const DOT_DOT = "must not contain '..' segments";
const absPath = z
  .string()
  .refine((s) => s.startsWith("/") || s.includes(TEMPLATE_MARK), "must be an absolute path")
  .refine(noDotDot, DOT_DOT);
const bool = z.union([z.boolean(), z.enum(["true", "false"]), templated]);
const count = z.union([
  z.number().int().min(0),
  z.string().regex(/^\d+$/, "must be a non-negative integer"),
  templated,
]);
const mode = z.union([
  z.string().regex(/^0?[0-7]{3,4}$/, 'must be an octal mode such as "0644"'),
  z
    .number()
    .int()
    .refine((n) => /^[0-7]{3,4}$/.test(String(n)), 'must be an octal mode such as "0644"'),
  templated,
]);
/** An enum field, or a template rendered per agent (the agent checks the rendered value). */
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z
    .string()
    .refine(
      (s) => (values as readonly string[]).includes(s) || s.includes(TEMPLATE_MARK),
      `must be one of ${values.join(", ")} (or a {{ template }})`,
    );
const env = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name"),
  z.union([z.string(), z.number(), z.boolean()]),
);
const names = z.array(nonEmpty);

const owned = { mode: mode.optional(), owner: nonEmpty.optional(), group: nonEmpty.optional() };

/** A literal value is checked here; a templated one is checked by the agent once rendered. */
const literalOr = (s: string, ok: (s: string) => boolean) => s.includes(TEMPLATE_MARK) || ok(s);
const single = (s: string) => !/[\r\n]/.test(s);
const oneLine = z.string().refine(single, "must be one line");
/** Regular expressions are JavaScript's (the agent's), without flags. */
const regexp = nonEmpty.superRefine((s, ctx) => {
  if (s.includes(TEMPLATE_MARK)) return;
  try {
    new RegExp(s);
  } catch (e) {
    ctx.addIssue({ code: "custom", message: `must be a valid regular expression: ${(e as Error).message}` });
  }
});
/** Where a new line or block goes when nothing matches: a regexp, or EOF/BOF. */
const placement = {
  insert_after: regexp.optional(),
  insert_before: regexp.optional(),
};
const onePlacement = {
  check: (r: { insert_after?: unknown; insert_before?: unknown }) =>
    r.insert_after === undefined || r.insert_before === undefined,
  params: { message: "give at most one of insert_after and insert_before", path: ["insert_before"] },
};
const cronSchedule = oneLine.superRefine((s, ctx) => {
  const bad = s.includes(TEMPLATE_MARK) ? null : checkCronSchedule(s);
  if (bad) ctx.addIssue({ code: "custom", message: bad });
});
/** A cron.d file is readable by every local user: a secret must not be written into one. */
const noSecret = (v: unknown) => !refsIn(v).some((r) => r.ns === "secrets");

/** One string or a list of them: `suites: bookworm` and `suites: [bookworm, bookworm-updates]` both read. */
const oneOrMany = z.union([oneLine.pipe(nonEmpty), z.array(oneLine.pipe(nonEmpty)).min(1, "must not be empty")]);
/** Required unless `state` is absent (or templated: the agent checks the rendered value). */
const requiredUnlessAbsent =
  (keys: readonly string[]) => (r: Record<string, unknown> & { state?: string | undefined }, ctx: z.RefinementCtx) => {
    if (r.state === "absent" || r.state?.includes(TEMPLATE_MARK)) return;
    for (const k of keys)
      if (r[k] === undefined)
        ctx.addIssue({ code: "custom", path: [k], message: `${k} is required unless state is absent` });
  };
const named = (re: RegExp, rule: string) => nonEmpty.refine((s) => literalOr(s, (v) => re.test(v)), rule);
/**
 * Fields written into files every local user can read. The schema refuses a plain
 * `{{ secrets.x }}` in them; liquid/check.ts catches every other way a version-2 template reads one.
 */
export const WORLD_READABLE = {
  cron: { fields: ["schedule", "env"], why: "a cron.d file is readable by every local user" },
  // The system types write nothing private: every field but the name (a process argument) and
  // signed_by (a file name), each refused on its own grounds, is refused here.
  sysctl: {
    fields: ["value", "state", "persist"],
    why: "/etc/sysctl.d and /proc/sys are readable by every local user",
  },
  apt_repository: {
    fields: ["uris", "suites", "components", "types", "architectures", "key", "enabled", "update", "state"],
    why: "sources lists are readable by every local user (put repository credentials in /etc/apt/auth.conf.d with a file resource, mode 0600)",
  },
  yum_repository: {
    fields: ["display_name", "baseurl", "mirrorlist", "metalink", "enabled", "gpgcheck", "gpgkey", "key", "state"],
    why: "repository files are readable by every local user",
  },
  systemd_unit: {
    fields: ["content", "state", "enabled", "refresh"],
    why: "unit files are readable by every local user and `systemctl show` prints Environment= to anyone (use EnvironmentFile= naming a file resource with mode 0600)",
  },
} as const;
/** The schema's half of WORLD_READABLE: a plain `{{ secrets.x }}` in one of the fields, at its path. */
const publicFields =
  (type: Exclude<keyof typeof WORLD_READABLE, "cron">) => (r: Record<string, unknown>, ctx: z.RefinementCtx) => {
    for (const f of WORLD_READABLE[type].fields)
      if (r[f] !== undefined && !noSecret(r[f]))
        ctx.addIssue({
          code: "custom",
          path: [f],
          message: `must not hold a {{ secrets.* }}: ${WORLD_READABLE[type].why}`,
        });
  };
const armoredKey = text.refine((s) => literalOr(s, (v) => ARMORED_PUBLIC_KEY_RE.test(v)), ARMORED_PUBLIC_KEY_RULE);

/** The system types (sysctl, repositories, systemd units): whole files the agent owns. */
const SYSTEM_TYPES = {
  sysctl: z
    .strictObject({
      name: named(SYSCTL_NAME_RE, SYSCTL_NAME_RULE),
      value: z.union([oneLine, z.number(), z.boolean()]).optional(),
      state: oneOf(["present", "absent"]).optional(),
      persist: bool.optional(),
    })
    .superRefine(publicFields("sysctl"))
    .superRefine(requiredUnlessAbsent(["value"])),
  apt_repository: z
    .strictObject({
      name: named(REPOSITORY_NAME_RE, REPOSITORY_NAME_RULE),
      uris: oneOrMany.optional(),
      suites: oneOrMany.optional(),
      components: oneOrMany.optional(),
      types: z.union([oneOf(["deb", "deb-src"]), z.array(oneOf(["deb", "deb-src"])).min(1)]).optional(),
      architectures: oneOrMany.optional(),
      key: armoredKey.optional(),
      signed_by: absPath.optional(),
      enabled: bool.optional(),
      update: bool.optional(),
      state: oneOf(["present", "absent"]).optional(),
    })
    .refine((r) => r.key === undefined || r.signed_by === undefined, {
      message: "give at most one of key and signed_by",
      path: ["signed_by"],
    })
    .superRefine(publicFields("apt_repository"))
    .superRefine(requiredUnlessAbsent(["uris", "suites"])),
  yum_repository: z
    .strictObject({
      name: named(REPOSITORY_NAME_RE, REPOSITORY_NAME_RULE),
      display_name: oneLine.optional(),
      baseurl: oneOrMany.optional(),
      mirrorlist: oneLine.pipe(nonEmpty).optional(),
      metalink: oneLine.pipe(nonEmpty).optional(),
      enabled: bool.optional(),
      gpgcheck: bool.optional(),
      gpgkey: oneOrMany.optional(),
      key: armoredKey.optional(),
      state: oneOf(["present", "absent"]).optional(),
    })
    .refine((r) => r.key === undefined || r.gpgkey === undefined, {
      message: "give at most one of key and gpgkey",
      path: ["gpgkey"],
    })
    .superRefine(publicFields("yum_repository"))
    .superRefine((r, ctx) => {
      if (r.state === "absent" || r.state?.includes(TEMPLATE_MARK)) return;
      if (r.baseurl === undefined && r.mirrorlist === undefined && r.metalink === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["baseurl"],
          message: "one of baseurl, mirrorlist or metalink is required unless state is absent",
        });
    }),
  systemd_unit: z
    .strictObject({
      name: nonEmpty.refine((s) => literalOr(s, isSystemdUnitName), SYSTEMD_UNIT_RULE),
      content: text.optional(),
      state: oneOf(["running", "stopped", "absent"]).optional(),
      enabled: bool.optional(),
      refresh: oneOf(["restart", "reload"]).optional(),
    })
    .superRefine(publicFields("systemd_unit"))
    .superRefine(requiredUnlessAbsent(["content"])),
} as const;

/**
 * A blob (docs/modules.md, "Blobs"), named literally: the state service ships it to the agent
 * before an apply, so the upload checks that it is stored (unknown_blob).
 */
const blobDigest = z
  .string()
  .refine(
    (s) => BLOB_DIGEST.test(s) || isBundleRef(s) || s.includes(TEMPLATE_MARK),
    `must be ${BUNDLE_REF_RULE} (or, in version 2, a {{ template }} rendering to one)`,
  );
const contentOrSource = (r: { content?: string | undefined; source?: string | undefined }, ctx: z.RefinementCtx) => {
  if (r.content !== undefined && r.source !== undefined)
    ctx.addIssue({ code: "custom", path: ["source"], message: "give content or source, not both" });
};

export const RESOURCE_TYPES = {
  ...SYSTEM_TYPES,
  file: z
    .strictObject({
      path: absPath,
      content: text.optional(),
      source: blobDigest.optional(),
      /** Version 2: the source is a text template, rendered per agent like `content` (module/template-files.ts). */
      template: z.boolean().optional(),
      state: oneOf(["present", "absent"]).optional(),
      ...owned,
    })
    .superRefine(contentOrSource)
    .refine((r) => !r.template || r.source !== undefined, {
      message: "template: true renders a source: give one",
      path: ["template"],
    }),
  /** A blob (tar, tar.gz or zip) extracted into a directory; the agent reads it with @orch/kit/archive. */
  archive: z.strictObject({
    path: absPath.refine((s) => s.replace(/\/+$/, "") !== "", "must not be /"),
    source: blobDigest,
    owner: nonEmpty.optional(),
    group: nonEmpty.optional(),
    clean: bool.optional(),
  }),
  directory: z.strictObject({
    path: absPath,
    state: oneOf(["present", "absent"]).optional(),
    recurse: bool.optional(),
    force: bool.optional(),
    ...owned,
  }),
  symlink: z
    .strictObject({
      path: absPath,
      target: nonEmpty.refine(noDotDot, DOT_DOT).optional(),
      state: oneOf(["present", "absent"]).optional(),
    })
    .refine((r) => r.target !== undefined || r.state === "absent" || Boolean(r.state?.includes(TEMPLATE_MARK)), {
      message: "target is required unless state is absent",
      path: ["target"],
    }),
  exec: z
    .strictObject({
      command: nonEmpty.optional(),
      script: nonEmpty.optional(),
      creates: absPath.optional(),
      onlyif: nonEmpty.optional(),
      unless: nonEmpty.optional(),
      env: env.optional(),
      cwd: absPath.optional(),
      timeout_seconds: count.optional(),
    })
    .refine((r) => (r.command === undefined) !== (r.script === undefined), {
      message: "exactly one of command or script is required",
      path: ["command"],
    }),
  package: z.strictObject({
    name: nonEmpty,
    state: oneOf(["present", "absent", "latest"]).optional(),
    version: nonEmpty.optional(),
  }),
  service: z
    .strictObject({
      name: nonEmpty,
      state: oneOf(["running", "stopped"]).optional(),
      enabled: bool.optional(),
      /** What a notify/watch trigger does (version 2): restart (default) or reload. */
      refresh: oneOf(["restart", "reload"]).optional(),
    })
    .refine((r) => r.state !== undefined || r.enabled !== undefined, {
      message: "at least one of state or enabled is required",
      path: ["state"],
    }),
  user: z.strictObject({
    name: nonEmpty,
    state: oneOf(["present", "absent"]).optional(),
    uid: count.optional(),
    group: nonEmpty.optional(),
    gid: count.optional(),
    groups: names.optional(),
    home: absPath.optional(),
    shell: nonEmpty.optional(),
    comment: text.optional(),
    system: bool.optional(),
  }),
  group: z.strictObject({
    name: nonEmpty,
    state: oneOf(["present", "absent"]).optional(),
    gid: count.optional(),
    system: bool.optional(),
  }),
  line: z
    .strictObject({
      path: absPath,
      line: oneLine.optional(),
      match: regexp.optional(),
      state: oneOf(["present", "absent"]).optional(),
      create: bool.optional(),
      ...placement,
    })
    .refine(onePlacement.check, onePlacement.params)
    .refine((r) => r.line !== undefined || r.state === "absent" || Boolean(r.state?.includes(TEMPLATE_MARK)), {
      message: "line is required unless state is absent",
      path: ["line"],
    })
    .refine((r) => r.line !== undefined || r.match !== undefined, {
      message: "state absent needs match or line",
      path: ["match"],
    }),
  block: z
    .strictObject({
      path: absPath,
      content: text.optional(),
      marker: oneLine.refine((s) => s.includes("{mark}"), "must contain {mark} (replaced by BEGIN and END)").optional(),
      state: oneOf(["present", "absent"]).optional(),
      create: bool.optional(),
      ...placement,
    })
    .refine(onePlacement.check, onePlacement.params)
    .refine((r) => r.content !== undefined || r.state === "absent" || Boolean(r.state?.includes(TEMPLATE_MARK)), {
      message: "content is required unless state is absent",
      path: ["content"],
    }),
  cron: z
    .strictObject({
      name: nonEmpty.refine((s) => literalOr(s, (v) => CRON_NAME_RE.test(v)), `must be ${CRON_NAME_RULE}`),
      schedule: cronSchedule
        .refine(noSecret, "must not hold a {{ secrets.* }}: a cron.d file is readable by every local user")
        .optional(),
      command: nonEmpty.refine(single, "must be one line").optional(),
      user: nonEmpty.refine((s) => literalOr(s, (v) => CRON_USER_RE.test(v)), CRON_USER_RULE).optional(),
      env: z
        .record(z.string(), z.union([oneLine, z.number(), z.boolean()]))
        // Keys checked here rather than in the record's key schema, whose issue does not say why.
        .superRefine((env, ctx) => {
          for (const k of Object.keys(env))
            if (!CRON_ENV_KEY_RE.test(k))
              ctx.addIssue({ code: "custom", path: [k], message: "must be an environment variable name" });
        })
        .refine(noSecret, "must not hold a {{ secrets.* }}: a cron.d file is readable by every local user")
        .optional(),
      state: oneOf(["present", "absent"]).optional(),
    })
    .superRefine((r, ctx) => {
      if (r.state === "absent" || r.state?.includes(TEMPLATE_MARK)) return;
      for (const k of ["schedule", "command"] as const)
        if (r[k] === undefined)
          ctx.addIssue({ code: "custom", path: [k], message: `${k} is required unless state is absent` });
    }),
} as const;

export type ResourceType = keyof typeof RESOURCE_TYPES;

/**
 * Fields the agent passes as process arguments (`/bin/sh -c <command>`, `useradd ... <comment>`,
 * `getent passwd <owner>`): any local user of the agent can read a process's arguments in
 * /proc/<pid>/cmdline, so a secret must never be rendered into one. Exec's `env` (readable only by
 * the process's owner and root) and `script` (written to a private file) are the ways to pass one.
 */
export const ARGUMENT_FIELDS: Readonly<Record<ResourceType, readonly string[]>> = {
  file: ["owner", "group"],
  archive: ["owner", "group"],
  directory: ["owner", "group"],
  symlink: [],
  exec: ["command", "onlyif", "unless"],
  package: ["name", "version"],
  service: ["name"],
  user: ["name", "uid", "group", "gid", "groups", "home", "shell", "comment"],
  group: ["name", "gid"],
  line: [],
  block: [],
  // cron runs the command as `/bin/sh -c <command>`.
  cron: ["command", "user"],
  // Refused whole (world-readable files); the names are also systemctl/apt-get arguments.
  sysctl: ["name"],
  apt_repository: ["name"],
  yum_repository: ["name"],
  systemd_unit: ["name"],
};

/**
 * Fields that become a file name (or a symlink's target, which `ls -l` shows anyone): a directory
 * listing is readable by any local user, so a secret must never be rendered into one. Every type
 * is listed, so a new type has to say.
 */
export const PATH_FIELDS: Readonly<Record<ResourceType, readonly string[]>> = {
  file: ["path"],
  archive: ["path"],
  directory: ["path"],
  symlink: ["path", "target"],
  exec: ["creates", "cwd"],
  package: [],
  service: [],
  user: ["home"],
  group: [],
  line: ["path"],
  block: ["path"],
  // The file <cron dir>/<name>.
  cron: ["name"],
  sysctl: ["name"],
  apt_repository: ["name", "signed_by"],
  yum_repository: ["name"],
  systemd_unit: ["name"],
};

export const isResourceType = (t: unknown): t is ResourceType =>
  typeof t === "string" && Object.hasOwn(RESOURCE_TYPES, t);

export const RESOURCE_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
export const MAX_RESOURCES = 2000;

/** Resource-level keys; everything else in a resource is its type's spec. */
export const resourceBase = z.looseObject({
  id: z
    .string()
    .regex(
      RESOURCE_ID_RE,
      "must be 1-128 characters of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
    ),
  type: z.string(),
  requires: z.union([nonEmpty, z.array(nonEmpty)]).optional(),
  /** Version 2 (parse.ts refuses them otherwise): ids, as requires. */
  onchanges: z.union([nonEmpty, z.array(nonEmpty)]).optional(),
  notify: z.union([nonEmpty, z.array(nonEmpty)]).optional(),
  watch: z.union([nonEmpty, z.array(nonEmpty)]).optional(),
  description: z.string().optional(),
});

export const moduleDoc = z.strictObject({
  version: z.literal([1, 2], "must be 1 or 2 (2: templates, parameters, values and triggers)").optional(),
  name: z.string().regex(NAME_RE, `must be ${NAME_RULE}`),
  description: z.string().optional(),
  /** Version 2: checked by parseParameterDecls (parameters.ts), which gives each problem its line. */
  parameters: z.unknown().optional(),
  resources: z.array(z.unknown()).max(MAX_RESOURCES, `at most ${MAX_RESOURCES} resources`),
});

/** A validated resource, before rendering. `spec` holds the type's fields only. */
export interface ModuleResource {
  id: string;
  type: ResourceType;
  requires: string[];
  spec: Record<string, unknown>;
  /** Version 2: ids of this module's resources whose change re-applies this one (empty otherwise). */
  onchanges: string[];
  /** Version 2: ids this resource's change notifies (empty otherwise). */
  notify: string[];
  /** Version 2: ids this resource watches (empty otherwise). */
  watch: string[];
}

export interface ParsedModule {
  name: string;
  description: string;
  /** Schema version: 1 keeps the original `{{ ns.key }}` substitution, 2 renders with the template engine. */
  version: 1 | 2;
  /** Declared parameters (version 2; empty for version 1). */
  parameters: Record<string, ParameterDecl>;
  resources: ModuleResource[];
  /** The blobs its file and archive resources name (`source:`), each where it is written, for unknown_blob. */
  blobs: BlobRef[];
  /**
   * Version 2: `template: true` file sources, not yet read. Each is read from its blob, checked and
   * turned into the resource's `content` before the module renders (module/template-files.ts).
   */
  templateFiles: TemplateFileRef[];
  /** The bundle's files by path (files/…): a templated `source:` resolves through it once rendered. */
  bundle: ReadonlyMap<string, BundleFile>;
}

/** A `file` with `source:` and `template: true`: where, and the source as written (files/… or a digest). */
export interface TemplateFileRef extends BlobRef {
  resource: number;
  source: string;
}

/** A `source:` digest in a module, and where. */
export interface BlobRef {
  digest: string;
  /** `resources[i].source` */
  path: string;
  line: number;
  column: number;
}
