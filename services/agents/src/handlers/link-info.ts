import type { AgentsService } from "@orch/contracts";
import type { Handlers } from "@orch/kit";
import type { LinkIdentity } from "../link/tls.js";

type LinkInfoHandlers = Pick<Handlers<typeof AgentsService>, "getLinkInfo">;

/**
 * What the gateway's install script embeds: where the link is and which certificate to pin. The
 * CA's fingerprint when the chain has one (it survives server certificate renewals), else the
 * server certificate's.
 */
export function linkInfoHandlers(link: {
  advertiseAddress: string;
  port: () => number;
  identity: LinkIdentity | undefined;
}): LinkInfoHandlers {
  return {
    async getLinkInfo() {
      const id = link.identity;
      return {
        advertiseAddress: link.advertiseAddress,
        port: link.port(),
        fingerprint: id ? (id.chainFingerprints.at(-1) ?? id.fingerprint) : "",
        insecure: !id,
      };
    },
  };
}
