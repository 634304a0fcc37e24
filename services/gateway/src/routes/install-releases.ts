import { compareVersions } from "@orch/contracts";
import {
  cachedReleaseCatalog,
  loadReleasePublicKey,
  notFound,
  unavailable,
  verifyManifest,
  type Clock,
  type Logger,
  type ReleaseCatalog,
  type ReleaseEntry,
} from "@orch/kit";

/**
 * Why nothing can be installed yet, and how to change that: the install script, the release
 * listing and through it orchctl all print this one text.
 */
export const NO_PACKAGES_DETAIL =
  "no orch-agent package is published on this server yet (its releases.dir holds no signed release). " +
  "Publish one with `npm run build:agent-package` in the server's checkout (it signs with .orch/release.key " +
  "or --signing-key and writes dist/agent-releases, which `npm run up` serves); `npm run up` builds one in " +
  "the background when there is none, so under it one appears within a few minutes.";

/** A key that failed to load (not there yet, unreadable) is tried again after this long. */
export const KEY_RETRY_MS = 5000;

export interface InstallReleases {
  /**
   * The releases whose stored signature verifies, at most RELEASE_CATALOG_TTL_MS old; 503
   * release_signing_unavailable without the public key, 404 agent_packages_unavailable when none.
   */
  catalog(): Promise<ReleaseCatalog & { latest: string }>;
  /** One verified version; 404 agent_version_not_found (or agent_packages_unavailable when there is none). */
  version(v: string): Promise<ReleaseEntry>;
  /** The release public key (SPKI PEM); 503 release_signing_unavailable when unset or unreadable. */
  publicKey(): Promise<string>;
}

/**
 * The releases the gateway serves under /install. The gateway signs nothing: each manifest was
 * signed once at build and its signature stored beside it (manifest.json.sig). It holds only the
 * public key, and serves a release only when that stored signature verifies, so whoever can write
 * releases.dir still cannot get anything past the install script or an agent's upgrader through
 * this gateway. Both the releases and the key are files an operator may add after the gateway
 * started: the catalog is re-read when older than RELEASE_CATALOG_TTL_MS (the kit's cached read),
 * a key that failed to load is retried after KEY_RETRY_MS (the failure logged once per attempt).
 */
export function installReleases(o: { dir: string; publicKeyFile: string; clock: Clock; log: Logger }): InstallReleases {
  const releases = cachedReleaseCatalog(o.dir, o.clock);
  let key: { at: number; pem: Promise<string | undefined> } | undefined;
  /** Verdicts per version, valid while the manifest bytes, signature and key are the same. */
  const checked = new Map<string, { bytes: Buffer; sig: string; pem: string; ok: boolean }>();
  let filtered: { from: ReleaseCatalog; pem: string; verified: ReleaseCatalog } | undefined;

  const loadKey = async (): Promise<string | undefined> => {
    if (!o.publicKeyFile) return undefined;
    try {
      return await loadReleasePublicKey(o.publicKeyFile);
    } catch (err) {
      o.log.warn({ err: (err as Error).message }, "release public key unavailable");
      return undefined;
    }
  };

  const signedBy = (e: ReleaseEntry, pem: string): boolean => {
    const hit = checked.get(e.manifest.version);
    if (hit?.pem === pem && hit.sig === e.sig && hit.bytes.equals(e.bytes)) return hit.ok;
    const ok = verifyManifest(e.bytes, e.sig, pem);
    // Once per change, not per request: someone wrote releases.dir without the release key.
    if (!ok)
      o.log.warn(
        { version: e.manifest.version, dir: e.dir },
        "release not served: its manifest.json.sig does not verify with releases.public_key_file",
      );
    checked.set(e.manifest.version, { bytes: e.bytes, sig: e.sig, pem, ok });
    return ok;
  };

  const api: InstallReleases = {
    async publicKey() {
      const now = o.clock.now();
      if (!key) key = { at: now, pem: loadKey() };
      let pem = await key.pem;
      if (!pem && now - key.at >= KEY_RETRY_MS) {
        key = { at: now, pem: loadKey() };
        pem = await key.pem;
      }
      if (!pem)
        throw unavailable(
          "release_signing_unavailable",
          "this gateway has no release public key (releases.public_key_file), so it cannot check and serve signed releases",
        );
      return pem;
    },
    async catalog() {
      const pem = await api.publicKey();
      const all = await releases.get();
      if (filtered?.from !== all || filtered.pem !== pem) {
        const versions = new Map([...all.versions].filter(([, e]) => signedBy(e, pem)));
        let latest: string | undefined;
        // all.versions is in no particular order; the kit's latest may be one refused here.
        for (const v of versions.keys()) if (latest === undefined || compareVersions(v, latest) > 0) latest = v;
        filtered = { from: all, pem, verified: { versions, latest } };
      }
      const c = filtered.verified;
      if (c.latest === undefined) throw notFound("agent_packages_unavailable", NO_PACKAGES_DETAIL);
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
  };
  return api;
}
