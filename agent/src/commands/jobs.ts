/** The jobs running on this agent, by job id, so CancelCommand can reach them. */
export interface Jobs {
  /** Registers a job; undefined when one with this id is running already. */
  start(jobId: string): AbortController | undefined;
  /** Aborts a running job; false when none has this id. */
  cancel(jobId: string): boolean;
  finish(jobId: string): void;
}

export function createJobs(): Jobs {
  const live = new Map<string, AbortController>();
  return {
    start(jobId) {
      if (live.has(jobId)) return undefined;
      const ac = new AbortController();
      live.set(jobId, ac);
      return ac;
    },
    cancel(jobId) {
      const ac = live.get(jobId);
      if (!ac) return false;
      ac.abort();
      return true;
    },
    finish(jobId) {
      live.delete(jobId);
    },
  };
}
