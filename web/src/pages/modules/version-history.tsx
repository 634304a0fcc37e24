/**
 * A module's uploads, newest first, from the audit log (the API stores only the current content, so
 * earlier versions are listed by time, author and SHA-256 but cannot be opened).
 */
import { useModuleHistory } from "../../api/modules";
import { Badge, EmptyState, QueryStatus, Section, Time } from "../../ui";
import { TableRegion } from "../parts/table-region";

export function VersionHistory({ name, currentSha256 }: { name: string; currentSha256: string }) {
  const history = useModuleHistory(name, currentSha256);
  const versions = history.data ?? [];
  return (
    <Section title="Version history">
      <QueryStatus query={history}>
        {versions.length === 0 ? (
          <EmptyState title="No uploads recorded in the audit log yet." />
        ) : (
          <TableRegion label="Uploads">
            <table className="table" data-testid="version-history">
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Uploaded</th>
                  <th scope="col">By</th>
                  <th scope="col">Resources</th>
                  <th scope="col">SHA-256</th>
                </tr>
              </thead>
              <tbody>
                {versions.map((v, i) => (
                  <tr key={v.eventId}>
                    <td>
                      {versions.length - i}
                      {v.sha256 === currentSha256 && i === 0 ? (
                        <>
                          {" "}
                          <Badge tone="ok">current</Badge>
                        </>
                      ) : null}
                    </td>
                    <td>
                      <Time value={v.timestamp} />
                    </td>
                    <td>{v.by}</td>
                    <td>{v.resources ?? "—"}</td>
                    <td className="mono" title={v.sha256}>
                      {v.sha256 ? v.sha256.slice(0, 12) : "—"}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
      </QueryStatus>
      <p className="muted">Earlier contents are not kept for viewing; the SHA-256 identifies each upload.</p>
    </Section>
  );
}
