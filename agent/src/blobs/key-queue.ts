/**
 * Runs tasks one after another per key and concurrently across keys. A failed task does not stop
 * the next one for its key: each caller gets its own result or error.
 */
export function createKeyQueue() {
  const tails = new Map<string, Promise<unknown>>();
  return function run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = tails.get(key) ?? Promise.resolve();
    const current = previous.then(task, task);
    tails.set(key, current);
    // Forget the key once its last task is done, so the map holds only keys in use.
    const forget = () => {
      if (tails.get(key) === current) tails.delete(key);
    };
    current.then(forget, forget);
    return current;
  };
}
