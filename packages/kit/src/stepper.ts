/** What a pure step returns: the next state and the effects its driver performs, in order. */
export interface Transition<S, F> {
  state: S;
  effects: F[];
}

export interface Stepper<S, E> {
  readonly state: S;
  dispatch(event: E): void;
}

/**
 * The loop every machine-style driver runs (services/agents/src/link/machine.ts and the rest): events
 * go through the pure `step` one at a time, in arrival order. An event raised while effects run (an
 * effect that dispatches synchronously) waits until the current step's effects are done, so two
 * steps' effects never interleave.
 */
export function createStepper<S, E, F>(
  initial: S,
  step: (state: S, event: E) => Transition<S, F>,
  perform: (effect: F) => void,
): Stepper<S, E> {
  let state = initial;
  const inbox: E[] = [];
  let stepping = false;
  return {
    get state() {
      return state;
    },
    dispatch(event) {
      inbox.push(event);
      if (stepping) return;
      stepping = true;
      try {
        for (let e = inbox.shift(); e !== undefined; e = inbox.shift()) {
          const t = step(state, e);
          state = t.state;
          for (const effect of t.effects) perform(effect);
        }
      } finally {
        stepping = false;
      }
    },
  };
}
