import type { BlobFiles, Provider } from "../types.js";
import { archiveProvider } from "./archive.js";
import { recordsDir } from "./archive-record.js";
import { blockProvider } from "./block.js";
import { cronProvider } from "./cron.js";
import { directoryProvider } from "./directory.js";
import { execProvider } from "./exec.js";
import { fileProvider } from "./file.js";
import { groupProvider } from "./group.js";
import { lineProvider } from "./line.js";
import { packageProvider } from "./package.js";
import { serviceProvider } from "./service.js";
import { symlinkProvider } from "./symlink.js";
import { userProvider } from "./user.js";
import { aptRepositoryProvider } from "./apt-repository.js";
import { sysctlProvider } from "./sysctl.js";
import { systemdUnitProvider } from "./systemd-unit.js";
import { yumRepositoryProvider } from "./yum-repository.js";

/** Every resource type this agent enforces, by the `type` of a StateResource. */
export interface ProviderOptions {
  /** Where `cron` resources are written (default /etc/cron.d; tests use a temp dir). */
  cronDir?: string | undefined;
  /** The agent's blob cache, for `file` resources with a `source` and `archive`s; without it no blob is held. */
  blobs?: BlobFiles | undefined;
  /** The agent's data directory, where `archive` resources record what they extracted. */
  dataDir?: string | undefined;
}

const NO_BLOBS: BlobFiles = { path: async () => undefined, discard: async () => undefined };

export function defaultProviders(opts: ProviderOptions = {}): Record<string, Provider> {
  return {
    file: fileProvider({ blobs: opts.blobs ?? NO_BLOBS }),
    archive: archiveProvider({
      blobs: opts.blobs ?? NO_BLOBS,
      records: opts.dataDir === undefined ? undefined : recordsDir(opts.dataDir),
    }),
    directory: directoryProvider(),
    symlink: symlinkProvider(),
    exec: execProvider(),
    package: packageProvider(),
    service: serviceProvider(),
    user: userProvider(),
    group: groupProvider(),
    line: lineProvider(),
    block: blockProvider(),
    cron: cronProvider({ dir: opts.cronDir }),
    sysctl: sysctlProvider(),
    apt_repository: aptRepositoryProvider(),
    yum_repository: yumRepositoryProvider(),
    systemd_unit: systemdUnitProvider(),
  };
}
