import { AgentUpgradeService } from "@orch/contracts";
import type { Feature } from "../runtime.js";
import { AGENT_VERSION } from "../version.js";
import { installLayout } from "./layout.js";
import { releaseArch, stageUpgrade, type StageDeps } from "./stage.js";
import { UpgradeRefused, type UpgradeState } from "./states.js";
import { startWatchdog } from "./watchdog.js";

/** Time for the accepted reply to travel back over the link before the process stops. */
export const EXIT_DELAY_MS = 300;
/** Kept back from the caller's deadline for unpacking and the smoke test after the download. */
const AFTER_DOWNLOAD_MS = 25_000;

export interface UpgradeFeatureOptions {
  env?: NodeJS.ProcessEnv;
  currentVersion?: string;
  now?: () => number;
  arch?: string;
  exitDelayMs?: number;
  timeouts?: StageDeps["timeouts"];
}

/**
 * AgentUpgradeService.Upgrade (docs/agent-install.md § Upgrades) and, on start, the rollback
 * watchdog of a release that was just upgraded to. Only an installed agent (ORCH_AGENT_RELEASE_DIR
 * set by the package's wrapper) can upgrade; any other refuses with upgrade_unsupported.
 */
export function createUpgradeFeature(o: UpgradeFeatureOptions = {}): Feature {
  return async (rt) => {
    const env = o.env ?? process.env;
    const now = o.now ?? Date.now;
    const currentVersion = o.currentVersion ?? AGENT_VERSION;
    const layout = installLayout(env.ORCH_AGENT_RELEASE_DIR);
    await startWatchdog({
      layout,
      dataDir: rt.dataDir,
      currentVersion,
      now,
      log: rt.log,
      onLinkUp: (fn) => rt.onLinkUp(fn),
      exit: (code) => rt.exit(code),
    });

    let state: UpgradeState = "idle";
    rt.serve(AgentUpgradeService, {
      async upgrade(req, ctx) {
        if (state !== "idle")
          return { accepted: false, reason: "upgrade_in_progress", message: `an upgrade is ${state}` };
        try {
          await stageUpgrade(
            {
              layout,
              packagesUrl: rt.options.packagesUrl,
              releaseKeyFile: rt.options.releaseKeyFile,
              currentVersion,
              dataDir: rt.dataDir,
              arch: releaseArch(o.arch),
              now,
              log: rt.log,
              onState: (s) => (state = s),
              timeouts: o.timeouts ?? { packageMs: Math.max(5_000, ctx.deadline - now() - AFTER_DOWNLOAD_MS) },
            },
            {
              id: req.upgradeId,
              version: req.version,
              deadlineSeconds: req.deadlineSeconds || 120,
              notAfter: ctx.deadline,
            },
          );
        } catch (err) {
          state = "idle";
          if (err instanceof UpgradeRefused) {
            rt.log.warn({ upgrade_id: req.upgradeId, version: req.version, reason: err.reason }, err.message);
            return { accepted: false, reason: err.reason, message: err.message };
          }
          rt.log.error({ upgrade_id: req.upgradeId, err: (err as Error).message }, "agent upgrade failed");
          return {
            accepted: false,
            reason: "upgrade_unsupported",
            message: `could not stage: ${(err as Error).message}`,
          };
        }
        // `current` now points at the new release; systemd (Restart=always) starts it after this exit.
        setTimeout(() => rt.exit(0), o.exitDelayMs ?? EXIT_DELAY_MS).unref();
        return { accepted: true, reason: "", message: `restarting into orch-agent ${req.version}` };
      },
    });
  };
}

export const upgradeFeature: Feature = createUpgradeFeature();
