/** An assignment's parameters on the command line: `--param name=value` and `--params-file f.yaml`. */
import { readFile } from "node:fs/promises";
import { isMap, isScalar, isSeq, parse, parseDocument } from "yaml";
import { CliError } from "./errors.js";

/** Templates are rendered by the server per agent: such a value is sent as the text it is. */
const templated = (v: string) => v.includes("{{") || v.includes("{%");

/**
 * `name=value`, the value read as one YAML scalar or flow collection, as an operator types it:
 * `port=8080` is a number, `debug=true` a boolean, `hosts=[a, b]` a list, `site=example.org` a
 * string. Anything else (a block mapping such as `a: b`, several documents) stays the text typed.
 */
export function parseParamArg(arg: string): [string, unknown] {
  const i = arg.indexOf("=");
  if (i <= 0) throw new CliError(`--param ${JSON.stringify(arg)} is not name=value`, "invalid_argument");
  const name = arg.slice(0, i);
  const text = arg.slice(i + 1);
  if (text.trim() === "" || templated(text)) return [name, text];
  const doc = parseDocument(text, { prettyErrors: false });
  const root = doc.contents;
  const flow = isScalar(root) || ((isMap(root) || isSeq(root)) && root.flow === true);
  if (doc.errors.length || !flow) return [name, text];
  return [name, doc.toJS({ maxAliasCount: 0 })];
}

/** A YAML (or JSON) file holding one map from parameter name to value. */
export async function readParamsFile(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new CliError(`cannot read --params-file ${file}: ${(err as Error).message}`, "invalid_argument");
  }
  let data: unknown;
  try {
    data = parse(text, { maxAliasCount: 100 });
  } catch (err) {
    throw new CliError(`--params-file ${file} is not valid YAML: ${(err as Error).message}`, "invalid_argument");
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== "object" || Array.isArray(data))
    throw new CliError(`--params-file ${file} must hold a map from parameter name to value`, "invalid_argument");
  return data as Record<string, unknown>;
}

/** The parameters of a create or update: the file's (or `base`), then each --param over them. */
export async function collectParams(
  base: Readonly<Record<string, unknown>>,
  opts: { param: readonly string[]; paramsFile?: string },
): Promise<Record<string, unknown>> {
  const out = opts.paramsFile !== undefined ? await readParamsFile(opts.paramsFile) : { ...base };
  for (const arg of opts.param) {
    const [name, value] = parseParamArg(arg);
    out[name] = value;
  }
  return out;
}

/**
 * `port=8080, site=example.org, note="a, b"` for `assignments show`, in --param's own grammar: a
 * string is shown bare only when --param would read it back as that string (so "8080" is quoted).
 */
export function formatParams(params: Readonly<Record<string, unknown>>): string {
  const bare = (v: string) => !/[\s,"]/.test(v) && parseParamArg(`x=${v}`)[1] === v && v !== "";
  // By name: the server's order is its storage's (jsonb sorts keys by length).
  return Object.entries(params)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${typeof v === "string" && bare(v) ? v : JSON.stringify(v)}`)
    .join(", ");
}
