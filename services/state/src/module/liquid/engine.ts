import { type Context, type Emitter, evalToken, ForTag, type FS, Liquid } from "liquidjs";
import { stringify as toYaml } from "yaml";

/**
 * The one template engine of version-2 modules: LiquidJS, sandboxed. It interprets templates
 * (no eval or new Function), reads only own properties of the context, cannot read files (the
 * tags that would are removed, and the file system it is given refuses every read) and stops a
 * template that runs away in time, output or allocations.
 */

/** A file system that holds nothing: whatever a tag or a future option asks for is refused. */
const NO_FILES: FS = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async (file) => {
    throw new Error(`templates cannot read files (${file})`);
  },
  readFileSync: (file) => {
    throw new Error(`templates cannot read files (${file})`);
  },
  resolve: (_dir, file) => file,
  contains: async () => false,
  containsSync: () => false,
};

/** Tags that read other templates from the file system: a module's templates stand alone. */
const FILE_TAGS = ["include", "render", "layout", "block"] as const;
/** `sample` renders differently every time: a drift check would always find a change. */
const UNSTABLE_FILTERS = ["sample"] as const;

/**
 * Limits that turn a runaway template into an error instead of a hang: a string of a module is at
 * most 256 KiB, so parse is bounded by that; one render of a string runs at most `loopIterations`
 * loop bodies in all (counted, so a million-iteration loop fails the same on any machine), for at
 * most `renderMs` (a backstop: time depends on the machine), and allocates at most `memory`
 * (characters of joined/appended strings and array elements, as LiquidJS counts them).
 */
export const LIMITS = {
  parse: 1024 * 1024,
  renderMs: 1000,
  loopIterations: 100_000,
  memory: 64 * 1024 * 1024,
} as const;

/** Loop bodies run so far by each render (a Context is one render's). */
const iterations = new WeakMap<Context, number>();

/** `{{ text | indent: 4 }}`: every line but the first (unless `first` is true), blank lines left blank. */
export function indent(v: unknown, n: unknown = 2, first: unknown = false): string {
  const width = Math.max(0, Math.min(Number(n) || 0, 256));
  const pad = " ".repeat(width);
  return String(v ?? "")
    .split("\n")
    .map((line, i) => ((i > 0 || first === true) && line !== "" ? pad + line : line))
    .join("\n");
}

/** JSON of a value; `undefined` (a missing value under `default`) is `null`. */
const toJson = (v: unknown) => JSON.stringify(v ?? null);

/** YAML of a value, without the trailing new line (the template places its own). */
const yamlOf = (v: unknown) => toYaml(v ?? null, { lineWidth: 0 }).replace(/\n$/, "");

const b64encode = (v: unknown) => Buffer.from(String(v ?? ""), "utf8").toString("base64");
const b64decode = (v: unknown) => Buffer.from(String(v ?? ""), "base64").toString("utf8");

/** What a value is, for messages; never the value itself (it may be a secret). */
function kindOf(v: unknown): string {
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "a map" : `a ${typeof v}`;
}

/**
 * `for` over a list, a map (its key/value pairs) or a range only. LiquidJS also loops over a
 * string (once) and over a number or boolean (never): with values typed per environment, that is
 * a value of the wrong type going unnoticed, so it is an error naming the collection instead.
 * A missing or null collection renders the loop's `else`, as in LiquidJS.
 */
class StrictForTag extends ForTag {
  override *render(ctx: Context, emitter: Emitter): ReturnType<ForTag["render"]> {
    const collection: unknown = yield evalToken(this.collection, ctx);
    if (collection !== null && collection !== undefined && typeof collection !== "object")
      throw new Error(`for loops over a list or a map; ${this.collection.getText()} is ${kindOf(collection)}`);
    const size = collection ? (Array.isArray(collection) ? collection.length : Object.keys(collection).length) : 0;
    const total = (iterations.get(ctx) ?? 0) + size;
    if (total > LIMITS.loopIterations)
      throw new Error(`template loop limit exceeded: more than ${LIMITS.loopIterations} loop iterations in one render`);
    iterations.set(ctx, total);
    return yield* super.render(ctx, emitter);
  }
}

function createEngine(): Liquid {
  const engine = new Liquid({
    strictFilters: true,
    strictVariables: true,
    // `{% if values.x %}` and `values.x | default: …` test for a value without failing on its absence.
    lenientIf: true,
    ownPropertyOnly: true,
    fs: NO_FILES,
    relativeReference: false,
    dynamicPartials: false,
    parseLimit: LIMITS.parse,
    renderLimit: LIMITS.renderMs,
    memoryLimit: LIMITS.memory,
  });
  for (const tag of FILE_TAGS) delete engine.tags[tag];
  for (const filter of UNSTABLE_FILTERS) delete engine.filters[filter];
  engine.registerTag("for", StrictForTag);
  engine.registerFilter("to_json", toJson);
  engine.registerFilter("to_yaml", yamlOf);
  engine.registerFilter("indent", indent);
  engine.registerFilter("b64encode", b64encode);
  engine.registerFilter("b64decode", b64decode);
  return engine;
}

export const engine: Liquid = createEngine();

/** Render options of every call: each render gets its own time and memory budget. */
export const RENDER_OPTIONS = { renderLimit: LIMITS.renderMs, memoryLimit: LIMITS.memory } as const;
