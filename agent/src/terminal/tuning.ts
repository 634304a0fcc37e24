export interface SessionTuning {
  /** Output is published when this many bytes are pending (also the largest message) ... */
  flushBytes: number;
  /**
   * ... or this long after the previous publish while output keeps coming. Output after a quiet
   * spell (a keystroke's echo, a prompt) is published at once.
   */
  flushDelayMs: number;
  /** Output held before the first attach beyond this pauses the PTY (the shell blocks, nothing is lost). */
  holdLimitBytes: number;
  /** Between SIGHUP and SIGKILL of the session's processes. */
  killGraceMs: number;
}

// Every message costs a gRPC frame, a NATS message, a WebSocket frame and a transcript line, so
// sustained output goes in large messages, but not larger than this: a message and its NATS header
// then fit in one 64 KiB socket read at the subscribers (gateway, recorder), which nats.js hands
// over as a view of that read. A larger one is rebuilt in a buffer grown copy by copy; with 256 KiB
// the path cost ~25 % more CPU per MiB (npm run bench -- terminal).
export const DEFAULT_TUNING: SessionTuning = {
  flushBytes: 60 * 1024,
  flushDelayMs: 4,
  holdLimitBytes: 1024 * 1024,
  killGraceMs: 2000,
};
