/**
 * The attach URL that came with a just-opened session, passed from /agents/:nodeId/terminal to
 * /terminal/:sessionId. Its ticket is single use, so it is taken once; a reload finds nothing here
 * and asks the API for a new ticket instead.
 */
const fresh = new Map<string, string>();

export function handOff(sessionId: string, wsUrl: string): void {
  fresh.set(sessionId, wsUrl);
}

export function takeHandOff(sessionId: string): string | undefined {
  const url = fresh.get(sessionId);
  fresh.delete(sessionId);
  return url;
}
