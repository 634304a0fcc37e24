/**
 * A tiny store for the two things every page must react to: the gateway being unreachable (a banner,
 * while React Query keeps retrying) and the session having ended (back to sign-in, then to this page).
 */
type Listener = () => void;

export interface ConnectivityState {
  /** Why the last request failed (5xx or network), or undefined when the gateway answers. */
  down: string | undefined;
  /** Set once a request came back 401: the page should send the operator to sign in. */
  sessionExpired: boolean;
}

let state: ConnectivityState = { down: undefined, sessionExpired: false };
const listeners = new Set<Listener>();

function set(next: ConnectivityState): void {
  if (next.down === state.down && next.sessionExpired === state.sessionExpired) return;
  state = next;
  for (const l of listeners) l();
}

export const connectivity = {
  get: (): ConnectivityState => state,
  subscribe(listener: Listener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  ok: (): void => set({ ...state, down: undefined }),
  failed: (why: string): void => set({ ...state, down: why }),
  sessionExpired: (): void => set({ ...state, sessionExpired: true }),
  /** After a successful sign-in. */
  signedIn: (): void => set({ down: undefined, sessionExpired: false }),
};
