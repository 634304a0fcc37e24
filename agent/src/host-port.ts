/**
 * `host:port` as the agent accepts it (a bracketed IPv6 literal or a name without colons). A leaf:
 * options, discovery and the link's trust all parse addresses, and none of them may import another
 * just for this.
 */
export const HOST_PORT_RE = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):(\d{1,5})$/;

export function validHostPort(s: string): boolean {
  const m = HOST_PORT_RE.exec(s);
  return Boolean(m && Number(m[2]) >= 1 && Number(m[2]) <= 65535);
}
