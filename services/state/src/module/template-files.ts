import { invalid, type Queryable } from "@orch/kit";
import { blobsDb } from "../blobs/tables.js";
import { unknownBlobMessage } from "../blobs/referenced.js";
import { templateProblem } from "./liquid/check.js";
import type { ParsedModule, TemplateFileRef } from "./types.js";

/**
 * `template: true` file sources (version 2): the file's text becomes the resource's `content`, so
 * it renders per agent exactly like inline content (values, parameters, secrets, sealing, diffs).
 * Reading it needs the database, so it happens after the (synchronous, cached) parse and before
 * the module is rendered or stored: a template error names the file before anything is sent.
 */

/** Templates are text read whole: larger files belong in a plain `source:`, sent as they are. */
export const TEMPLATE_FILE_MAX_BYTES = 1024 * 1024;

/** Turns the module's template sources into content, in place; a parsed module is inlined once. */
export async function inlineTemplateFiles(db: Queryable, parsed: ParsedModule): Promise<void> {
  if (parsed.templateFiles.length === 0) return;
  const texts = await Promise.all(parsed.templateFiles.map((ref) => readTemplate(db, ref)));
  parsed.templateFiles.forEach((ref, i) => {
    const text = texts[i]!;
    const problem = templateProblem("file", { content: text });
    if (problem)
      throw invalid("invalid_template", `${ref.source}: ${problem.message}`, {
        field: "content",
        path: ref.path,
        line: ref.line,
        column: ref.column,
      });
    const r = parsed.resources[ref.resource]!;
    const { source: _source, template: _template, ...rest } = r.spec;
    r.spec = { ...rest, content: text };
  });
  parsed.templateFiles = [];
}

async function readTemplate(db: Queryable, ref: TemplateFileRef): Promise<string> {
  const where = { field: "content", path: ref.path, line: ref.line, column: ref.column };
  const blob = await blobsDb.get(db, ref.digest);
  if (!blob) throw invalid("unknown_blob", unknownBlobMessage(ref), where);
  if (blob.size > TEMPLATE_FILE_MAX_BYTES)
    throw invalid(
      "invalid_template",
      `${ref.source} is ${blob.size} bytes: a template file is at most ${TEMPLATE_FILE_MAX_BYTES} bytes (1 MiB); ship larger files without template: true`,
      where,
    );
  // Chunks are as the uploader sent them (any size up to BLOB_CHUNK_BYTES): read until the size.
  const chunks: Buffer[] = [];
  for (let bytes = 0; bytes < blob.size; ) {
    const more = await blobsDb.chunks(db, blob.content_id, chunks.length, 64);
    if (more.length === 0) break;
    chunks.push(...more);
    bytes += more.reduce((n, c) => n + c.length, 0);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw invalid("invalid_template", `${ref.source} is not UTF-8 text, so it cannot be a template`, where);
  }
}
