import { parse as parseYaml } from "yaml";
import { invalid, type OrchError } from "@orch/kit";

/**
 * Module parameters (schema version 2): what a module declares under `parameters:` and what an
 * assignment gives it. Pure: the upload parser, the assignment handlers, a git source's assignment
 * files and the renderer all call these, so one value is accepted or refused the same way everywhere.
 */

/** A parameter name: read in templates as `{{ parameters.<name> }}`, so an identifier. */
export const PARAMETER_NAME_RE = /^[a-z_][a-z0-9_]{0,63}$/;
export const PARAMETER_NAME_RULE = "1-64 characters of a-z, 0-9 or '_', not starting with a digit";
export const PARAMETER_TYPES = ["string", "number", "integer", "boolean", "list", "map", "any"] as const;
export type ParameterType = (typeof PARAMETER_TYPES)[number];
/** Declarations per module. */
export const MAX_PARAMETERS = 100;
/** An assignment's given parameters, as JSON: they are stored with it and copied into every operation. */
export const MAX_PARAMETERS_BYTES = 64 * 1024;

export interface ParameterDecl {
  type: ParameterType;
  /** Absent: none (the parameter is then either required or left out of `parameters`). */
  default?: unknown;
  required: boolean;
  description: string;
}

const DECL_KEYS = new Set(["type", "default", "required", "description"]);

const isParameterType = (t: unknown): t is ParameterType =>
  typeof t === "string" && (PARAMETER_TYPES as readonly string[]).includes(t);

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * A string holding a template (`{{ … }}` or `{% … %}`) stands for a value of any type: it is
 * rendered per agent over its values, and the result is checked then (coerceParameter).
 */
export const isTemplated = (v: unknown): v is string => typeof v === "string" && (v.includes("{{") || v.includes("{%"));

/** Whether a literal value has the type (a templated string is not decided here). */
export function matchesType(type: ParameterType, v: unknown): boolean {
  switch (type) {
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number" && Number.isFinite(v);
    case "integer":
      return typeof v === "number" && Number.isSafeInteger(v);
    case "boolean":
      return typeof v === "boolean";
    case "list":
      return Array.isArray(v);
    case "map":
      return isMap(v);
    case "any":
      return v !== undefined;
  }
}

const ARTICLE: Record<ParameterType, string> = {
  string: "a string",
  number: "a number",
  integer: "an integer",
  boolean: "a boolean (true or false)",
  list: "a list",
  map: "a map",
  any: "a value",
};

/** `an integer`, as messages read. */
export const expected = (type: ParameterType) => ARTICLE[type];

/** What a value is, for messages; never the value itself (keeps them short). */
export function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a map";
  if (typeof v === "number") return Number.isInteger(v) ? "an integer" : "a number";
  return `a ${typeof v}`;
}

type Path = ReadonlyArray<string | number>;
/** Builds the upload's error at a YAML path (parse.ts's locator: it knows the line). */
export type FailAt = (path: Path, message: string, keyNode?: boolean) => OrchError;

/** Validates a module's `parameters:` map; every refusal names its path (and so its line). */
export function parseParameterDecls(raw: unknown, fail: FailAt): Record<string, ParameterDecl> {
  if (raw === undefined || raw === null) return {};
  if (!isMap(raw))
    throw fail(["parameters"], "parameters is a map from name to {type, default, required, description}");
  const names = Object.keys(raw);
  if (names.length > MAX_PARAMETERS) throw fail(["parameters"], `at most ${MAX_PARAMETERS} parameters`);
  const out: Record<string, ParameterDecl> = {};
  for (const name of names) {
    const at = ["parameters", name];
    if (!PARAMETER_NAME_RE.test(name)) throw fail(at, `parameter name '${name}' must be ${PARAMETER_NAME_RULE}`, true);
    out[name] = parseDecl(raw[name], at, fail);
  }
  return out;
}

function parseDecl(raw: unknown, at: Path, fail: FailAt): ParameterDecl {
  if (!isMap(raw)) throw fail(at, "a parameter is a map with type (and default, required, description)");
  for (const k of Object.keys(raw)) if (!DECL_KEYS.has(k)) throw fail([...at, k], `unknown field '${k}'`, true);
  const { type, required, description } = raw;
  if (type === undefined) throw fail(at, `type is required (one of ${PARAMETER_TYPES.join(", ")})`);
  if (!isParameterType(type))
    throw fail([...at, "type"], `unknown parameter type '${String(type)}' (known: ${PARAMETER_TYPES.join(", ")})`);
  if (required !== undefined && typeof required !== "boolean")
    throw fail([...at, "required"], "required must be true or false");
  if (description !== undefined && typeof description !== "string")
    throw fail([...at, "description"], "description must be a string");
  const hasDefault = Object.hasOwn(raw, "default");
  if (hasDefault && required === true)
    throw fail([...at, "default"], "a required parameter has no default: drop one of required and default");
  if (hasDefault && !matchesType(type, raw.default) && !isTemplated(raw.default))
    throw fail(
      [...at, "default"],
      `default must be ${expected(type)} (the parameter's type), not ${kindOf(raw.default)}`,
    );
  return {
    type,
    ...(hasDefault ? { default: raw.default } : {}),
    required: required === true,
    description: description ?? "",
  };
}

/** One reason an assignment's parameters are refused; `parameter` is absent for the map as a whole. */
export interface ParameterProblem {
  code: "unknown_parameter" | "missing_parameter" | "invalid_parameter" | "invalid_request";
  parameter?: string;
  message: string;
}

/** A module as the check reads it: its name (for messages) and declarations. */
export interface DeclaringModule {
  name: string;
  parameters: Readonly<Record<string, ParameterDecl>>;
}

const shortName = (name: string) => (name.length > 64 ? `${name.slice(0, 64)}…` : name);

/**
 * Every problem of the parameters `given` to an assignment of `modules`, in a stable order (the
 * given names in order, then the missing ones). A name is known when one of the modules declares
 * it, and its value must then suit every declaration of it.
 */
export function checkParameters(
  modules: readonly DeclaringModule[],
  given: unknown,
  /** Why a templated value cannot render (liquid/context.ts parameterTemplateProblem); injected: that module imports this one. */
  templateProblem: (value: string) => string | undefined = () => undefined,
): ParameterProblem[] {
  if (given === undefined || given === null) given = {};
  if (!isMap(given)) return [{ code: "invalid_request", message: "parameters must be a map from name to value" }];
  if (JSON.stringify(given).length > MAX_PARAMETERS_BYTES)
    return [{ code: "invalid_request", message: `parameters exceed ${MAX_PARAMETERS_BYTES} bytes as JSON` }];
  const problems: ParameterProblem[] = [];
  for (const [name, value] of Object.entries(given)) {
    const declaring = modules.filter((m) => Object.hasOwn(m.parameters, name));
    if (declaring.length === 0) {
      const of = modules.map((m) => m.name).join(", ");
      problems.push({
        code: "unknown_parameter",
        parameter: name,
        message: `parameter '${shortName(name)}' is declared by none of the assignment's modules (${of})`,
      });
      continue;
    }
    if (isTemplated(value)) {
      const bad = templateProblem(value);
      if (bad)
        problems.push({
          code: "invalid_parameter",
          parameter: name,
          message: `parameter '${name}' is a template that cannot render: ${bad}`,
        });
      continue;
    }
    const wrong = declaring.find((m) => !matchesType(m.parameters[name]!.type, value));
    if (wrong) {
      const type = wrong.parameters[name]!.type;
      problems.push({
        code: "invalid_parameter",
        parameter: name,
        message: `parameter '${name}' must be ${expected(type)} (module ${wrong.name} declares it ${type}), not ${kindOf(value)}`,
      });
    }
  }
  for (const m of modules)
    for (const [name, decl] of Object.entries(m.parameters))
      if (decl.required && !Object.hasOwn(given, name) && !problems.some((p) => p.parameter === name))
        problems.push({
          code: "missing_parameter",
          parameter: name,
          message: `module ${m.name} requires parameter '${name}' (${decl.type})`,
        });
  return problems;
}

/** The first problem as the API answers it (400, field `parameters.<name>`). */
export function parameterError(p: ParameterProblem): OrchError {
  const field = p.parameter === undefined ? "parameters" : `parameters.${p.parameter}`;
  return invalid(p.code, p.message, { field, ...(p.parameter !== undefined ? { parameter: p.parameter } : {}) });
}

/**
 * The parameters a module renders with: every declared one that was given or has a default (other
 * given names belong to the assignment's other modules). A required parameter never given is
 * missing_parameter (an assignment was checked at create; an ad-hoc apply of the module was not).
 */
export function resolveParameters(
  declared: Readonly<Record<string, ParameterDecl>>,
  given: Readonly<Record<string, unknown>> | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, decl] of Object.entries(declared)) {
    if (given && Object.hasOwn(given, name)) out[name] = given[name];
    else if (Object.hasOwn(decl, "default")) out[name] = decl.default;
    else if (decl.required)
      throw invalid("missing_parameter", `parameter '${name}' (${decl.type}) is required and was not given`, {
        field: `parameters.${name}`,
        parameter: name,
      });
  }
  return out;
}

const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * A value as its declaration types it, once rendered: a template renders to text, so "8080" is
 * the integer 8080, "true" the boolean, and a list or map is read as YAML flow or JSON
 * (`{{ values.hosts | json }}`). A literal of the right type is returned as it is; anything
 * else is invalid_parameter naming the parameter and the expected type.
 */
export function coerceParameter(decl: Pick<ParameterDecl, "type">, value: unknown, name = "parameter"): unknown {
  if (matchesType(decl.type, value)) return value;
  const bad = () =>
    invalid("invalid_parameter", `parameter '${name}' must be ${expected(decl.type)}, not ${kindOf(value)}`, {
      field: `parameters.${name}`,
      parameter: name,
      expected: decl.type,
    });
  if (typeof value !== "string") throw bad();
  const s = value.trim();
  switch (decl.type) {
    case "integer":
      if (INTEGER.test(s) && Number.isSafeInteger(Number(s))) return Number(s);
      break;
    case "number":
      if (NUMBER.test(s) && Number.isFinite(Number(s))) return Number(s);
      break;
    case "boolean":
      if (s === "true" || s === "false") return s === "true";
      break;
    case "list":
    case "map": {
      const parsed = readStructured(s);
      if (matchesType(decl.type, parsed)) return parsed;
      break;
    }
    default:
      break;
  }
  throw invalid(
    "invalid_parameter",
    `parameter '${name}' must be ${expected(decl.type)}; it rendered to ${JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s)}`,
    { field: `parameters.${name}`, parameter: name, expected: decl.type },
  );
}

function readStructured(s: string): unknown {
  try {
    return parseYaml(s, { maxAliasCount: 100 });
  } catch {
    return undefined;
  }
}
