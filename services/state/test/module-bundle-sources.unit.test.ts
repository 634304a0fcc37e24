import t from "tap";
import { OrchError } from "@orch/kit";
import { bundleFiles } from "../src/module/bundle-manifest.js";
import { parseModule } from "../src/module/parse.js";
import { moduleSha256 } from "../src/module/version-hash.js";

// Bundle sources (`source: files/…`) and `template: true` at parse time: resolution to the
// manifest's digest, each refusal with its reason and YAML line, and the version hash over files.
const D1 = `sha256:${"1".repeat(64)}`;
const D2 = `sha256:${"2".repeat(64)}`;
const files = [
  { path: "files/a.conf", digest: D1, size: 10 },
  { path: "files/bin/app", digest: D2, size: 20 },
];
const mod = (version: 1 | 2, extra: string) =>
  [`version: ${version}`, "name: b", "resources:", "  - id: f", "    type: file", "    path: /etc/f", extra, ""].join(
    "\n",
  );
const reasonOf = (fn: () => unknown) => {
  try {
    fn();
    return "parsed";
  } catch (e) {
    return e instanceof OrchError ? `${e.reason}@${e.details.line}` : String(e);
  }
};

t.test("files/… resolves to the manifest's digest; template sources are listed, not shipped", async (t) => {
  const plain = parseModule(mod(1, "    source: files/bin/app"), "b", files);
  t.equal(plain.resources[0]!.spec.source, D2);
  t.same(
    plain.blobs.map((b) => [b.digest, b.line]),
    [[D2, 7]],
  );
  const tpl = parseModule(mod(2, "    source: files/a.conf\n    template: true"), "b", files);
  t.same(tpl.blobs, [], "a template is rendered into content, so its blob is not shipped");
  t.match(tpl.templateFiles, [{ digest: D1, source: "files/a.conf", line: 7, resource: 0 }]);
});

t.test("refusals name the reason and the line", async (t) => {
  t.equal(
    reasonOf(() => parseModule(mod(1, "    source: files/nope"), "b", files)),
    "unknown_bundle_file@7",
  );
  t.equal(
    reasonOf(() => parseModule(mod(1, "    source: files/a.conf"), "b", null)),
    "unknown_bundle_file@7",
  );
  t.equal(
    reasonOf(() => parseModule(mod(1, "    source: files/../x"), "b", files)),
    "invalid_module@7",
  );
  t.equal(
    reasonOf(() => parseModule(mod(1, "    source: files/a.conf\n    template: true"), "b", files)),
    "invalid_module@8",
    "template: true needs version 2",
  );
  t.equal(
    reasonOf(() => parseModule(mod(2, "    content: x\n    template: true"), "b", files)),
    "invalid_module@8",
  );
});

t.test("the version hash covers the manifest, in any order; YAML-only modules hash as before", async (t) => {
  const yaml = "name: b\nresources: []\n";
  t.equal(moduleSha256(yaml, null), moduleSha256(yaml, []));
  t.equal(moduleSha256(yaml, files), moduleSha256(yaml, [...files].reverse()));
  t.not(moduleSha256(yaml, files), moduleSha256(yaml, null));
  t.not(moduleSha256(yaml, files), moduleSha256(yaml, [files[0]!, { ...files[1]!, digest: D1 }]));
});

t.test("the manifest an upload carries is checked like any input", async (t) => {
  t.equal(bundleFiles([]), null);
  const ok = bundleFiles([
    { path: "files/z", digest: D1, size: 1n },
    { path: "files/a", digest: D2, size: 2n },
  ]);
  t.same(
    ok?.map((f) => f.path),
    ["files/a", "files/z"],
  );
  const refuse = (m: { path: string; digest: string; size: bigint }[]) => {
    try {
      bundleFiles(m);
      return "accepted";
    } catch (e) {
      return (e as OrchError).reason;
    }
  };
  t.equal(refuse([{ path: "etc/passwd", digest: D1, size: 1n }]), "invalid_bundle");
  t.equal(refuse([{ path: "files/../x", digest: D1, size: 1n }]), "invalid_bundle");
  t.equal(
    refuse([
      { path: "files/a", digest: D1, size: 1n },
      { path: "files/a", digest: D2, size: 1n },
    ]),
    "unsafe_bundle_path",
  );
  t.equal(refuse([{ path: "files/a", digest: "md5:x", size: 1n }]), "invalid_digest");
  t.equal(refuse([{ path: "files/a", digest: D1, size: -1n }]), "invalid_bundle");
});
