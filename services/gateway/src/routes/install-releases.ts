import type { KeyObject } from "node:crypto";
import {
  loadReleaseSigningKey,
  cachedReleaseCatalog,
  notFound,
  releasePublicKeyPem,
  signManifest,
  unavailable,
  type Clock,
  type Logger,
  type ReleaseCatalog,
  type ReleaseEntry,
} from "@orch/kit";

/** A key that failed to load (not there yet, unreadable) is tried again after this long. */
export const KEY_RETRY_MS = 5000;

export interface ReleaseSigner {
  publicKeyPem: string;
  /** base64 signature of a manifest's bytes (cached per version and bytes). */
  sign(entry: ReleaseEntry): string;
}

export interface InstallReleases {
  /** The catalog, at most RELEASE_CATALOG_TTL_MS old; 404 agent_packages_unavailable when empty. */
  catalog(): Promise<ReleaseCatalog & { latest: string }>;
  /** One version; 404 agent_version_not_found (or agent_packages_unavailable when there is none). */
  version(v: string): Promise<ReleaseEntry>;
  /** The signing key; 503 release_signing_unavailable when unset or unreadable. */
  signer(): Promise<ReleaseSigner>;
}

/**
 * The releases the gateway serves under /install and the key that signs their manifests. Both are
 * files an operator may add after the gateway started, so neither is read once at startup: the
 * catalog is re-read when older than RELEASE_CATALOG_TTL_MS (the kit's cached read), a key that
 * failed to load is retried after KEY_RETRY_MS (and the failure logged once per attempt, never the key).
 */
export function installReleases(o: {
  dir: string;
  signingKeyFile: string;
  clock: Clock;
  log: Logger;
}): InstallReleases {
  const releases = cachedReleaseCatalog(o.dir, o.clock);
  let key: { at: number; signer: Promise<ReleaseSigner | undefined> } | undefined;

  const loadSigner = async (): Promise<ReleaseSigner | undefined> => {
    if (!o.signingKeyFile) return undefined;
    let k: KeyObject;
    try {
      k = await loadReleaseSigningKey(o.signingKeyFile);
    } catch (err) {
      o.log.warn({ err: (err as Error).message }, "release signing key unavailable");
      return undefined;
    }
    const sigs = new Map<string, { bytes: Buffer; sig: string }>();
    return {
      publicKeyPem: releasePublicKeyPem(k),
      sign(entry) {
        const hit = sigs.get(entry.manifest.version);
        if (hit?.bytes.equals(entry.bytes)) return hit.sig;
        const sig = signManifest(entry.bytes, k);
        sigs.set(entry.manifest.version, { bytes: entry.bytes, sig });
        return sig;
      },
    };
  };

  const api: InstallReleases = {
    async catalog() {
      const c = await releases.get();
      if (c.latest === undefined)
        throw notFound(
          "agent_packages_unavailable",
          "this server publishes no orch-agent packages (releases.dir); build them with npm run build:agent-package",
        );
      return c as ReleaseCatalog & { latest: string };
    },
    async version(v) {
      const c = await api.catalog();
      const e = c.versions.get(v);
      if (!e)
        throw notFound("agent_version_not_found", `no orch-agent release ${v}; the latest is ${c.latest}`, {
          version: v,
          latest: c.latest,
        });
      return e;
    },
    async signer() {
      const now = o.clock.now();
      if (!key) key = { at: now, signer: loadSigner() };
      let s = await key.signer;
      if (!s && now - key.at >= KEY_RETRY_MS) {
        key = { at: now, signer: loadSigner() };
        s = await key.signer;
      }
      if (!s)
        throw unavailable(
          "release_signing_unavailable",
          "this gateway has no release signing key (releases.signing_key_file), so it cannot serve signed releases",
        );
      return s;
    },
  };
  return api;
}
