/** A counting semaphore: at most `max` tasks run at once, the rest wait in FIFO order. */
export interface Limiter {
  run<T>(fn: () => Promise<T>): Promise<T>;
  readonly active: number;
}

export function createLimiter(max: number): Limiter {
  let active = 0;
  const queue: Array<() => void> = [];
  // A finishing task hands its slot straight to the next waiter, so a newcomer cannot overtake.
  const release = () => {
    const next = queue.shift();
    if (next) next();
    else active--;
  };
  return {
    get active() {
      return active;
    },
    async run<T>(fn: () => Promise<T>): Promise<T> {
      if (active >= max) await new Promise<void>((resolve) => queue.push(resolve));
      else active++;
      try {
        return await fn();
      } finally {
        release();
      }
    },
  };
}
