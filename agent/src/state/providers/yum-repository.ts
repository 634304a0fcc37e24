import { stat } from "node:fs/promises";
import { join } from "node:path";
import {
  ARMORED_PUBLIC_KEY_RE,
  ARMORED_PUBLIC_KEY_RULE,
  REPOSITORY_NAME_RE,
  REPOSITORY_NAME_RULE,
} from "@orch/contracts";
import { onlyKeys, optBool, optStr, state, str, words } from "../spec.js";
import { SpecError, UnsupportedError, type Provider, type Spec } from "../types.js";
import { applyFiles, checkFiles, managedHeader, type OwnedFile } from "./owned-files.js";

const FIELDS = [
  "name",
  "display_name",
  "baseurl",
  "mirrorlist",
  "metalink",
  "enabled",
  "gpgcheck",
  "gpgkey",
  "key",
  "state",
];

export interface YumRepositoryOptions {
  /** Where repository files live (default /etc/yum.repos.d, read by dnf and yum). */
  reposDir?: string | undefined;
  /** Where a key the module ships is written (default /etc/pki/rpm-gpg). */
  keyDir?: string | undefined;
}

const oneLine = (spec: Spec, key: string) => {
  const v = optStr(spec, key);
  if (v !== undefined && /[\r\n]/.test(v)) throw new SpecError(`field "${key}" must be one line`);
  return v;
};
const flag = (b: boolean) => (b ? "1" : "0");

/** `/etc/yum.repos.d/<name>.repo`, one section named like the resource; and its key when the module ships it. */
function parse(spec: Spec, o: Required<YumRepositoryOptions>): OwnedFile[] {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  if (!REPOSITORY_NAME_RE.test(name)) throw new SpecError(`field "name" ${REPOSITORY_NAME_RULE}`);
  const path = join(o.reposDir, `${name}.repo`);
  const keyPath = join(o.keyDir, `RPM-GPG-KEY-orch-${name}`);
  if (state(spec, ["present", "absent"] as const, "present") === "absent")
    return [
      { path, next: null },
      { path: keyPath, next: null },
    ];
  const key = optStr(spec, "key");
  const gpgkey = words(spec, "gpgkey", false);
  if (key !== undefined && gpgkey !== undefined) throw new SpecError(`give at most one of "key" and "gpgkey"`);
  if (key !== undefined && !ARMORED_PUBLIC_KEY_RE.test(key))
    throw new SpecError(`field "key" ${ARMORED_PUBLIC_KEY_RULE}`);
  const baseurl = words(spec, "baseurl", false);
  const mirrorlist = oneLine(spec, "mirrorlist");
  const metalink = oneLine(spec, "metalink");
  if (!baseurl && mirrorlist === undefined && metalink === undefined)
    throw new SpecError(`one of "baseurl", "mirrorlist" or "metalink" is required unless state is absent`);
  const lines: Array<[string, string | undefined]> = [
    ["name", oneLine(spec, "display_name") ?? name],
    ["baseurl", baseurl?.join(" ")],
    ["mirrorlist", mirrorlist],
    ["metalink", metalink],
    ["enabled", flag(optBool(spec, "enabled") ?? true)],
    ["gpgcheck", flag(optBool(spec, "gpgcheck") ?? true)],
    ["gpgkey", key !== undefined ? `file://${keyPath}` : gpgkey?.join(" ")],
  ];
  const text = [
    managedHeader("yum_repository"),
    `[${name}]`,
    ...lines.filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`),
    "",
  ].join("\n");
  return [
    { path: keyPath, next: key === undefined ? null : `${key.trim()}\n`, makeDir: true },
    { path, next: text },
  ];
}

/** A dnf/yum repository (dnf.conf(5) repo options); dnf reads its metadata itself when next asked. */
export function yumRepositoryProvider(opts: YumRepositoryOptions = {}): Provider {
  const o = { reposDir: opts.reposDir ?? "/etc/yum.repos.d", keyDir: opts.keyDir ?? "/etc/pki/rpm-gpg" };
  const requireYum = async () => {
    const st = await stat(o.reposDir).catch(() => null);
    if (!st?.isDirectory()) throw new UnsupportedError(`${o.reposDir} does not exist (is this an RPM-based system?)`);
  };
  return {
    async check(spec) {
      const files = parse(spec, o);
      await requireYum();
      return checkFiles(files);
    },
    async apply(spec) {
      const files = parse(spec, o);
      await requireYum();
      return applyFiles(files);
    },
  };
}
