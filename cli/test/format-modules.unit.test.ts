import t from "tap";
import type { ModuleInfo } from "@orch/client";
import {
  MODULE_COLUMNS,
  moduleContent,
  moduleFields,
  moduleFileLines,
  moduleRows,
  uploadedLine,
} from "../src/format/modules.js";
import { formatTable } from "../src/output.js";

const nginx = {
  name: "nginx",
  description: "web server and its site configuration for every public host",
  resource_count: 3,
  sha256: "0123456789abcdef".repeat(4),
  uploaded_at: 1_748_779_200,
  uploaded_by: "01J00000000000000000000ALC",
  uploaded_by_name: "alice",
  content: "name: nginx\nresources: []\n",
  files: [],
  source: null,
  commit: null,
  removed_from_source: false,
} satisfies ModuleInfo;

t.test("unit: modules table, and an empty one", async (t) => {
  t.equal(
    formatTable(MODULE_COLUMNS, moduleRows([nginx, { ...nginx, name: "users", resource_count: 12, description: "" }])),
    [
      "NAME   RESOURCES  UPLOADED                  BY     DESCRIPTION",
      "nginx  3          2025-06-01T12:00:00.000Z  alice  web server and its site configuration for every public host",
      "users  12         2025-06-01T12:00:00.000Z  alice",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(MODULE_COLUMNS, moduleRows([])), "NAME  RESOURCES  UPLOADED  BY  DESCRIPTION\n");
  const unnamed = { ...nginx, uploaded_by_name: "" };
  t.equal(moduleRows([unnamed])[0]?.[3], "01J00000000000000000000ALC", "no name sent: the id");
});

t.test("unit: module fields, content without its last newline, upload line", async (t) => {
  t.same(moduleFields(nginx), [
    ["name", "nginx"],
    ["description", "web server and its site configuration for every public host"],
    ["resources", 3],
    ["uploaded_at", "2025-06-01T12:00:00.000Z"],
    ["uploaded_by", "alice"],
    ["sha256", "0123456789abcdef".repeat(4)],
  ]);
  t.equal(moduleContent(nginx), "name: nginx\nresources: []");
  t.equal(uploadedLine(nginx), "Uploaded module nginx (3 resources, sha256 0123456789ab)");
  t.equal(uploadedLine({ ...nginx, resource_count: 1 }), "Uploaded module nginx (1 resource, sha256 0123456789ab)");
});

t.test("unit: a bundle's files: counted in the fields, one line each", async (t) => {
  const digest = `sha256:${"ab".repeat(32)}`;
  const bundle = { ...nginx, files: [{ path: "files/bin/app", digest, size: 1048576 }] };
  t.same(moduleFields(bundle).at(-1), ["files", 1]);
  t.same(moduleFileLines(bundle), [`files/bin/app  1048576 bytes  ${digest}`]);
  t.same(moduleFileLines(nginx), [], "a YAML module has none");
  t.equal(moduleFields(nginx).length, 6, "and no files field");
});
