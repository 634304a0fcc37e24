import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";

// Every service has the same skeleton (docs/development.md#service-skeleton); this keeps the tree and
// the documented matrix from drifting apart.
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SERVICES_DIR = join(ROOT, "services");
// The gateway is the HTTP edge, not an RPC service: it has its own layout (src/routes/).
const NOT_SKELETON = new Set(["gateway"]);

const REQUIRED = ["main.ts", "service.ts", "config.ts", "deps.ts", "handlers/", "migrations/", "test/harness.ts"];
const SLOTS = [...REQUIRED.slice(0, 5), "db/", "convert.ts", "validate.ts", ...REQUIRED.slice(5)];
const FORBIDDEN_SRC = ["db.ts", "proto.ts", "view.ts", "validation.ts"];
const FORBIDDEN_TEST = ["helpers.ts"];

/** Where a slot lives inside a service directory. */
const slotPath = (slot: string) =>
  slot === "migrations/" || slot.startsWith("test/") ? slot.replace(/\/$/, "") : `src/${slot.replace(/\/$/, "")}`;

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
const isFile = (p: string) => existsSync(p) && statSync(p).isFile();
const present = (dir: string, slot: string) =>
  slot.endsWith("/") ? isDir(join(dir, slotPath(slot))) : isFile(join(dir, slotPath(slot)));

function walk(dir: string): string[] {
  if (!isDir(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}

interface MatrixRow {
  service: string;
  slots: Map<string, "present" | "absent">;
  also: string[];
}

/** The service × slot table under "Service skeleton" in docs/development.md. */
function docsMatrix(): { header: string[]; rows: MatrixRow[] } {
  const text = readFileSync(join(ROOT, "docs/development.md"), "utf8");
  const section = text.slice(text.indexOf("### Service skeleton"));
  const lines = section.split("\n");
  const start = lines.findIndex((l) => l.startsWith("| service |"));
  if (start < 0) throw new Error("no '| service |' table under '### Service skeleton' in docs/development.md");
  const cells = (l: string) =>
    l
      .trim()
      .replace(/^\||\|$/g, "")
      .split("|")
      .map((c) => c.trim());
  const header = cells(lines[start]!);
  const rows: MatrixRow[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const c = cells(line);
    const slots = new Map<string, "present" | "absent">();
    header.slice(1, -1).forEach((h, i) => {
      const v = c[i + 1];
      if (v !== "✓" && v !== "—") throw new Error(`docs matrix: ${c[0]} / ${h} is '${v}', expected ✓ or —`);
      slots.set(h, v === "✓" ? "present" : "absent");
    });
    const also = [...(c.at(-1) ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    rows.push({ service: c[0]!, slots, also });
  }
  return { header, rows };
}

const services = readdirSync(SERVICES_DIR, { withFileTypes: true })
  .filter((e) => e.isDirectory() && !NOT_SKELETON.has(e.name) && isFile(join(SERVICES_DIR, e.name, "package.json")))
  .map((e) => e.name)
  .sort();
const matrix = docsMatrix();

t.test("the docs matrix has one column per slot and one row per service", async (t) => {
  t.same(matrix.header.slice(1, -1), SLOTS, "slot columns, in order");
  t.same(matrix.rows.map((r) => r.service).sort(), services, "a row for every service under services/");
});

for (const row of matrix.rows) {
  const dir = join(SERVICES_DIR, row.service);
  t.test(`${row.service}: the tree matches the docs matrix`, async (t) => {
    for (const slot of SLOTS) {
      const documented = row.slots.get(slot);
      t.equal(
        present(dir, slot) ? "present" : "absent",
        documented,
        `${row.service}/${slotPath(slot)} is ${documented} as documented`,
      );
    }
    for (const slot of REQUIRED) t.equal(row.slots.get(slot), "present", `${slot} is required`);
    const hasSchema = walk(join(dir, "migrations")).some((f) => f.endsWith(".sql"));
    if (hasSchema) t.equal(row.slots.get("db/"), "present", "a service with a schema keeps its SQL in src/db/");
    for (const name of row.also) t.ok(existsSync(join(dir, "src", name)), `src/${name} (listed as also) exists`);
  });

  t.test(`${row.service}: no forbidden names`, async (t) => {
    const src = walk(join(dir, "src")).map((f) => f.slice(dir.length + 1));
    const tests = walk(join(dir, "test")).map((f) => f.slice(dir.length + 1));
    const bad = [
      ...src.filter((f) => FORBIDDEN_SRC.some((n) => f.endsWith(`/${n}`))),
      ...tests.filter((f) => FORBIDDEN_TEST.some((n) => f.endsWith(`/${n}`))),
    ];
    t.same(bad, [], "db.ts, proto.ts, view.ts, validation.ts and test helpers.ts have their skeleton names");
  });

  t.test(`${row.service}: the skeleton files hold what their names say`, async (t) => {
    const pascal = row.service[0]!.toUpperCase() + row.service.slice(1);
    const read = (p: string) => readFileSync(join(dir, "src", p), "utf8");
    t.match(read("main.ts"), /\brunMain\(/, "main.ts wires the service with runMain");
    t.match(read("deps.ts"), new RegExp(`export type ${pascal}Deps\\b`), `deps.ts exports ${pascal}Deps`);
    t.match(
      read("service.ts"),
      new RegExp(`export async function create${pascal}Service\\(deps: ${pascal}Deps\\b`),
      `service.ts exports create${pascal}Service(deps: ${pascal}Deps)`,
    );
  });
}
