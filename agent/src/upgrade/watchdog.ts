import type { AgentLogger } from "../runtime.js";
import { switchCurrent, type InstallLayout } from "./layout.js";
import { readMarker, removeMarker } from "./marker.js";

export interface WatchdogDeps {
  layout: InstallLayout | undefined;
  dataDir: string;
  currentVersion: string;
  now(): number;
  log: AgentLogger;
  onLinkUp(listener: () => void): void;
  exit(code: number): void;
}

export interface Watchdog {
  /** "probation": this release was just upgraded to and must link up by the deadline. */
  state: "none" | "probation" | "confirmed" | "rolled_back";
  /** Settles when the probation ends (immediately when there is none). */
  settled: Promise<void>;
  cancel(): void;
}

/**
 * Run on start. With an upgrade marker naming this version, the release is on probation: a link
 * up confirms it (marker removed); no link up by the marker's deadline switches `current` back to
 * the release it came from, removes the marker and exits 1 (the unit restarts the old release).
 * A marker for another version is stale (an upgrade that never restarted, or an old release after
 * a rollback) and is removed.
 */
export async function startWatchdog(deps: WatchdogDeps): Promise<Watchdog> {
  const { log } = deps;
  const marker = deps.layout ? await readMarker(deps.dataDir) : undefined;
  const w: Watchdog = { state: "none", settled: Promise.resolve(), cancel() {} };
  if (!marker || !deps.layout) return w;
  if (marker.to !== deps.currentVersion) {
    log.warn({ upgrade_id: marker.id, to: marker.to, running: deps.currentVersion }, "stale upgrade marker removed");
    await removeMarker(deps.dataDir);
    return w;
  }
  const layout = deps.layout;
  w.state = "probation";
  log.info({ upgrade_id: marker.id, from: marker.from, deadline_at: marker.deadline_at }, "new release on probation");
  let timer: NodeJS.Timeout | undefined;
  w.settled = new Promise<void>((resolve) => {
    const end = () => {
      clearTimeout(timer);
      resolve();
    };
    deps.onLinkUp(() => {
      if (w.state !== "probation") return;
      w.state = "confirmed";
      log.info({ upgrade_id: marker.id, version: marker.to }, "upgrade confirmed: link up on the new release");
      void removeMarker(deps.dataDir).finally(end);
    });
    timer = setTimeout(
      () => {
        if (w.state !== "probation") return;
        w.state = "rolled_back";
        log.error(
          { upgrade_id: marker.id, from: marker.from, to: marker.to },
          "no link up on the new release before the deadline: switching back",
        );
        void switchCurrent(layout, marker.from_dir)
          .catch((err) => log.error({ err: (err as Error).message }, "could not switch back"))
          .then(() => removeMarker(deps.dataDir))
          .finally(() => {
            end();
            deps.exit(1);
          });
      },
      Math.max(0, marker.deadline_at - deps.now()),
    );
    w.cancel = () => {
      w.state = "none";
      end();
    };
  });
  return w;
}
