import { ScalarType, type DescEnum, type DescField, type DescMessage } from "@bufbuild/protobuf";

export type JsonSchema = Record<string, unknown>;

/**
 * JSON Schemas of protobuf messages, read off their protobuf-es descriptors, so a published
 * contract follows the .proto files instead of a hand-written copy. Properties are the proto field
 * names (`event_type`), as `toJson(schema, msg, { useProtoFieldName: true })` writes them; every
 * field is optional on the wire (proto3 omits default values). Nested messages become `$ref`s to
 * `<refPrefix><full type name>`; `schemas` collects each one reached (well-known types inline).
 */
export function protoJsonSchemas(roots: readonly DescMessage[], refPrefix: string): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {};
  const visit = (m: DescMessage): void => {
    if (m.typeName in schemas) return;
    schemas[m.typeName] = {}; // placeholder first: recursive messages terminate
    const properties: Record<string, JsonSchema> = {};
    for (const f of m.fields) properties[f.name] = fieldSchema(f);
    schemas[m.typeName] = {
      type: "object",
      title: m.typeName,
      "x-protobuf-message": m.typeName,
      properties,
    };
  };
  const ref = (m: DescMessage): JsonSchema => {
    const wkt = WELL_KNOWN[m.typeName];
    if (wkt) return { ...wkt };
    visit(m);
    return { $ref: `${refPrefix}${m.typeName}` };
  };
  const fieldSchema = (f: DescField): JsonSchema => {
    switch (f.fieldKind) {
      case "scalar":
        return scalarSchema(f.scalar);
      case "enum":
        return enumSchema(f.enum);
      case "message":
        return ref(f.message);
      case "list":
        return {
          type: "array",
          items:
            f.listKind === "scalar"
              ? scalarSchema(f.scalar)
              : f.listKind === "enum"
                ? enumSchema(f.enum)
                : ref(f.message),
        };
      case "map":
        return {
          type: "object",
          additionalProperties:
            f.mapKind === "scalar"
              ? scalarSchema(f.scalar)
              : f.mapKind === "enum"
                ? enumSchema(f.enum)
                : ref(f.message),
        };
    }
  };
  for (const m of roots) visit(m);
  return schemas;
}

/** The proto3 JSON mapping of each scalar type (64-bit integers are strings there). */
function scalarSchema(t: ScalarType): JsonSchema {
  switch (t) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return { type: "string", pattern: "^-?[0-9]+$" };
    default:
      return { type: "integer" };
  }
}

function enumSchema(e: DescEnum): JsonSchema {
  return { type: "string", enum: e.values.map((v) => v.name) };
}

/** Well-known types, by their proto3 JSON mapping. */
const WELL_KNOWN: Record<string, JsonSchema> = {
  "google.protobuf.Struct": { type: "object", description: "google.protobuf.Struct: any JSON object." },
  "google.protobuf.Value": { description: "google.protobuf.Value: any JSON value." },
  "google.protobuf.ListValue": { type: "array", description: "google.protobuf.ListValue: any JSON array." },
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?s$" },
  "google.protobuf.Empty": { type: "object", maxProperties: 0 },
};
