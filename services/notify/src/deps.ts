import type { ServiceDeps } from "@orch/kit";
import type { CredentialBox } from "./channels/crypto.js";
import type { NotifyConfig } from "./config.js";
import type { SendPolicy } from "./delivery/http.js";
import type { Resolver } from "./delivery/ssrf.js";

export type NotifyDeps = ServiceDeps<Readonly<NotifyConfig>>;

/** What handlers share: the deps plus the credential box and the outgoing-request policy. */
export interface NotifyRuntime {
  deps: NotifyDeps;
  box: CredentialBox;
  sendPolicy: SendPolicy;
}

export interface NotifyOptions {
  /** DNS resolution for outgoing requests (tests substitute names; production uses the system resolver). */
  resolver?: Resolver;
}
