/**
 * orchctl's early warning for channel URLs the notify service will refuse to deliver to: hosts that
 * are (or resolve, from here, to) anything but public unicast. The classifier is the one the server
 * applies (`@orch/kit/addresses`), and the setting is named the way the server's refusal names it.
 * A warning, not an error: the server may allow private targets, and it resolves names itself.
 */
import { lookup } from "node:dns/promises";
import { ALLOW_PRIVATE_TARGETS } from "@orch/contracts";
import { classifyAddress } from "@orch/kit/addresses";
import { settingName } from "@orch/kit/config";

/** Resolves a host name to its addresses; [] when it does not resolve (in time). */
export type Resolve = (host: string) => Promise<string[]>;

/** Config fields holding a URL the server sends to, with the flag that sets each. */
const URL_FIELDS: [field: string, flag: string][] = [
  ["url", "--url"],
  ["webhook_url", "--webhook-url"],
  ["server_url", "--server-url"],
];

// A slow resolver must not hold up `channels add` for long: the warning is only advice.
const LOOKUP_TIMEOUT_MS = 2000;

export const systemResolve: Resolve = async (host) => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => resolve([]), LOOKUP_TIMEOUT_MS);
    timer.unref();
  });
  const answer = lookup(host, { all: true, verbatim: true }).then(
    (as) => as.map((a) => a.address),
    () => [],
  );
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
};

/** One warning line per URL in `config` whose host the server's policy refuses by default. */
export async function privateTargetWarnings(
  config: Record<string, unknown>,
  resolve: Resolve = systemResolve,
): Promise<string[]> {
  const setting = settingName(ALLOW_PRIVATE_TARGETS.section, ALLOW_PRIVATE_TARGETS.key);
  const warnings: string[] = [];
  for (const [field, flag] of URL_FIELDS) {
    const raw = config[field];
    if (typeof raw !== "string") continue;
    let host: string;
    try {
      host = new URL(raw).hostname.replace(/^\[|\]$/g, "");
    } catch {
      continue; // the server names what is wrong with the URL
    }
    const literal = classifyAddress(host);
    const found = literal
      ? literal.public
        ? undefined
        : `${host} is a ${literal.reason} address`
      : (await resolve(host))
          .map((a) => classifyAddress(a))
          .filter((c) => c && !c.public)
          .map((c) => `${host} resolves here to ${c!.address} (${c!.reason})`)[0];
    if (found) warnings.push(`warning: ${flag} ${found}; the server refuses to deliver there unless ${setting} is on`);
  }
  return warnings;
}
