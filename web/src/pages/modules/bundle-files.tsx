/**
 * The files a module uploaded as a bundle ships (its manifest: path, size, the blob digest holding
 * the bytes). A YAML module has none and shows nothing. The digest is shortened in the table; the
 * full one is its tooltip and what "Copy" puts on the clipboard.
 */
import { useEffect, useState } from "react";
import type { ModuleInfo } from "../../api/modules";
import { formatBytes } from "../../lib/agent-format";
import { shortDigest } from "../../lib/digest";
import { Section } from "../../ui";
import { TableRegion } from "../parts/table-region";

export type BundleFile = ModuleInfo["files"][number];

function CopyDigest({ path, digest }: { path: string; digest: string }) {
  const [copied, setCopied] = useState<boolean | undefined>();
  useEffect(() => {
    if (copied === undefined) return;
    const t = setTimeout(() => setCopied(undefined), 2000);
    return () => clearTimeout(t);
  }, [copied]);
  const copy = () =>
    navigator.clipboard?.writeText(digest).then(
      () => setCopied(true),
      () => setCopied(false),
    ) ?? setCopied(false);
  return (
    <>
      <button type="button" className="btn btn-small" aria-label={`Copy the digest of ${path}`} onClick={copy}>
        Copy
      </button>
      <span role="status" className="muted">
        {copied === true ? " Copied" : copied === false ? " Copy failed: select the digest instead" : ""}
      </span>
    </>
  );
}

export function BundleFiles({ files }: { files: readonly BundleFile[] }) {
  if (files.length === 0) return null;
  const total = files.reduce((n, f) => n + f.size, 0);
  return (
    <Section title="Files">
      <p className="muted">
        {files.length} {files.length === 1 ? "file" : "files"}, {formatBytes(total)}, from the bundle: resources name
        them as <code>source: files/&lt;path&gt;</code>.
      </p>
      <TableRegion label="Bundle files">
        <table className="table cards" data-testid="bundle-files">
          <thead>
            <tr>
              <th scope="col">Path</th>
              <th scope="col">Size</th>
              <th scope="col">Digest</th>
            </tr>
          </thead>
          <tbody>
            {files.map((f) => (
              <tr key={f.path}>
                <td className="mono" data-label="Path">
                  {f.path}
                </td>
                <td data-label="Size" title={`${f.size} bytes`}>
                  {formatBytes(f.size)}
                </td>
                <td data-label="Digest">
                  <code className="mono" title={f.digest} data-digest={f.digest}>
                    {shortDigest(f.digest)}
                  </code>{" "}
                  <CopyDigest path={f.path} digest={f.digest} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </Section>
  );
}
