import t from "tap";
import { formatReleaseManifest, parseReleaseManifest, type ReleaseManifest } from "../src/index.js";

const manifest: ReleaseManifest = {
  schema: 1,
  name: "orch-agent",
  version: "0.2.0",
  node_version: "v24.21.0",
  created_at: "2026-11-24T12:00:00.000Z",
  packages: [
    { file: "orch-agent_0.2.0_amd64.deb", kind: "deb", arch: "amd64", sha256: "a".repeat(64), size: 123 },
    { file: "orch-agent-0.2.0-linux-amd64.tar.gz", kind: "tar", arch: "amd64", sha256: "b".repeat(64), size: 456 },
  ],
};

t.test("a manifest is pretty JSON with each package on one line, and parses back", async (t) => {
  const text = formatReleaseManifest(manifest);
  t.equal(
    text,
    `{
  "schema": 1,
  "name": "orch-agent",
  "version": "0.2.0",
  "node_version": "v24.21.0",
  "created_at": "2026-11-24T12:00:00.000Z",
  "packages": [
    {"file":"orch-agent_0.2.0_amd64.deb","kind":"deb","arch":"amd64","sha256":"${"a".repeat(64)}","size":123},
    {"file":"orch-agent-0.2.0-linux-amd64.tar.gz","kind":"tar","arch":"amd64","sha256":"${"b".repeat(64)}","size":456}
  ]
}
`,
  );
  t.same(parseReleaseManifest(text), manifest);
});

t.test("the install script's grep finds a package's sha256 on its own line", async (t) => {
  const line = formatReleaseManifest(manifest)
    .split("\n")
    .find((l) => l.includes('"file":"orch-agent-0.2.0-linux-amd64.tar.gz"'));
  t.match(line, /"sha256":"b{64}"/);
  t.notMatch(line, /a{64}/);
});

t.test("key order is fixed whatever order the object was built in, and no packages is []", async (t) => {
  const shuffled = {
    packages: [{ size: 1, sha256: "c".repeat(64), arch: "amd64", kind: "deb", file: "orch-agent_1.0.0_amd64.deb" }],
    created_at: "2026-11-24T12:00:00.000Z",
    node_version: "v24.21.0",
    version: "1.0.0",
    name: "orch-agent",
    schema: 1,
  } as ReleaseManifest;
  t.match(formatReleaseManifest(shuffled), /^ {4}\{"file":"orch-agent_1\.0\.0_amd64\.deb","kind":"deb",/m);
  t.match(formatReleaseManifest({ ...manifest, packages: [] }), /"packages": \[\]\n\}\n$/);
  t.same(parseReleaseManifest(formatReleaseManifest({ ...manifest, packages: [] }))?.packages, []);
});
