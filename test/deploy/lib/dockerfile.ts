// A small Dockerfile parser and the image policy of the orchestrator, checked statically (no
// Docker engine needed).
export interface Instruction {
  keyword: string; // upper case
  args: string;
  line: number;
}

export interface Stage {
  index: number;
  name?: string;
  from: string; // as written (may contain ${ARG})
  image: string; // ARGs resolved
  instructions: Instruction[];
}

/** Instructions with continuation lines joined; comments, blank lines and parser directives dropped. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split(/\r?\n/);
  let buf = "";
  let start = 0;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const trimmed = raw.trim();
    if (!buf && (trimmed === "" || trimmed.startsWith("#"))) continue;
    if (buf && trimmed.startsWith("#")) continue; // comment inside a continued instruction
    if (!buf) start = i + 1;
    if (trimmed.endsWith("\\")) {
      buf += `${trimmed.slice(0, -1)} `;
      continue;
    }
    buf += trimmed;
    const m = /^(\S+)\s*(.*)$/s.exec(buf)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start });
    buf = "";
  }
  if (buf) {
    const m = /^(\S+)\s*(.*)$/s.exec(buf)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start });
  }
  return out;
}

/** Splits into stages; global ARG defaults (before the first FROM) are substituted in FROM lines. */
export function stages(instructions: Instruction[]): Stage[] {
  const globals = new Map<string, string>();
  const out: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === "ARG" && out.length === 0) {
      const [k, ...v] = ins.args.split("=");
      globals.set(
        k!.trim(),
        v
          .join("=")
          .trim()
          .replace(/^"(.*)"$/, "$1"),
      );
      continue;
    }
    if (ins.keyword === "FROM") {
      const parts = ins.args.split(/\s+/).filter((p) => !p.startsWith("--"));
      const from = parts[0]!;
      const name = parts[1]?.toUpperCase() === "AS" ? parts[2] : undefined;
      const image = from.replace(/\$\{?(\w+)\}?/g, (_m, k: string) => globals.get(k) ?? `\${${k}}`);
      out.push({ index: out.length, ...(name ? { name } : {}), from, image, instructions: [] });
      continue;
    }
    out.at(-1)?.instructions.push(ins);
  }
  return out;
}

export interface DockerfileProblem {
  rule:
    | "multi-stage"
    | "base-image-tag"
    | "non-root-user"
    | "prod-deps-only"
    | "entrypoint"
    | "no-build-tools-in-runtime";
  message: string;
}

const BUILD_TOOLS = /\b(g\+\+|gcc|make|python3?|build-essential)\b/;

/** The image policy: multi-stage, pinned bases, numeric non-root USER, production deps only. */
export function lintDockerfile(text: string): DockerfileProblem[] {
  const problems: DockerfileProblem[] = [];
  const all = stages(parseDockerfile(text));
  if (all.length < 2)
    problems.push({
      rule: "multi-stage",
      message: `${all.length} stage(s); build and runtime must be separate stages`,
    });
  const stageNames = new Set(all.map((s) => s.name).filter(Boolean));

  for (const s of all) {
    if (stageNames.has(s.from)) continue; // FROM <earlier stage>
    if (s.image.includes("${")) {
      problems.push({
        rule: "base-image-tag",
        message: `stage ${s.name ?? s.index}: base image ${s.from} has no ARG default`,
      });
      continue;
    }
    const noDigest = s.image.split("@")[0]!;
    const slash = noDigest.lastIndexOf("/");
    const colon = noDigest.lastIndexOf(":");
    const tag = colon > slash ? noDigest.slice(colon + 1) : undefined;
    if (!tag && !s.image.includes("@"))
      problems.push({
        rule: "base-image-tag",
        message: `stage ${s.name ?? s.index}: base image ${s.image} has no tag`,
      });
    if (tag === "latest")
      problems.push({
        rule: "base-image-tag",
        message: `stage ${s.name ?? s.index}: base image ${s.image} uses latest`,
      });
  }

  const final = all.at(-1);
  if (final) {
    const users = final.instructions.filter((i) => i.keyword === "USER");
    const last = users.at(-1);
    const uid = last?.args.split(":")[0]?.trim();
    if (!last) problems.push({ rule: "non-root-user", message: "final stage has no USER (runs as root)" });
    else if (!/^\d+$/.test(uid!))
      problems.push({
        rule: "non-root-user",
        message: `final USER ${last.args} is not numeric (Kubernetes runAsNonRoot needs a numeric uid)`,
      });
    else if (Number(uid) === 0) problems.push({ rule: "non-root-user", message: "final USER is root (0)" });

    if (!final.instructions.some((i) => i.keyword === "ENTRYPOINT" && /\borch\b/.test(i.args))) {
      problems.push({ rule: "entrypoint", message: "final stage has no ENTRYPOINT running orch" });
    }
    for (const i of final.instructions.filter((x) => x.keyword === "RUN")) {
      if (/apt-get install|apk add/.test(i.args) && BUILD_TOOLS.test(i.args)) {
        problems.push({
          rule: "no-build-tools-in-runtime",
          message: `final stage installs build tools (line ${i.line})`,
        });
      }
    }
    // The runtime gets its files only from a stage that pruned dev dependencies.
    const copies = final.instructions.filter((i) => i.keyword === "COPY" && /--from=/.test(i.args));
    for (const c of copies) {
      const from = /--from=(\S+)/.exec(c.args)![1]!;
      const src = all.find((s) => s.name === from);
      const prunes = (st: Stage | undefined): boolean => {
        if (!st) return false;
        if (st.instructions.some((i) => i.keyword === "RUN" && isProdOnly(i.args))) return true;
        return prunes(all.find((s) => s.name === st.from));
      };
      if (!prunes(src))
        problems.push({
          rule: "prod-deps-only",
          message: `final stage copies from ${from}, which never drops dev dependencies`,
        });
    }
  }
  const runs = all.flatMap((s) => s.instructions.filter((i) => i.keyword === "RUN"));
  if (!runs.some((i) => isProdOnly(i.args))) {
    problems.push({
      rule: "prod-deps-only",
      message: "no `npm ci --omit=dev` or `npm prune --omit=dev`: dev dependencies would ship",
    });
  }
  return problems;
}

function isProdOnly(cmd: string): boolean {
  return (
    /\bnpm\s+(ci|prune)\b[^&;|]*--omit[= ]dev\b/.test(cmd) || /\bnpm\s+(ci|prune)\b[^&;|]*--production\b/.test(cmd)
  );
}
