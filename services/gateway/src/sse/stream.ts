import type { ServerResponse } from "node:http";
import type { CallOptions, Logger, NatsConnection } from "@orch/kit";
import type { Credential, EndReason, LiveSessions } from "../live-sessions.js";
import { SseChannel } from "./channel.js";

/** What every stream is given; each adds what it reads. */
export interface SseStreamDeps<S> {
  nc: NatsConnection;
  log: Logger;
  /** Open streams, so a gateway shutdown can end them. */
  registry: Set<S>;
  call: CallOptions;
  res: ServerResponse;
}

/**
 * A stream a route serves (serve.ts): `open` reads the first snapshot while errors can still be
 * answered as problem+json, `run` sends from it once the response is hijacked. It stays in the
 * registry while open, so a gateway shutdown can end it; the credential, the timers and the
 * response are the channel's.
 */
export abstract class SseStream<First> {
  protected readonly channel: SseChannel;

  /** `kind` names the stream to the live sessions (live-sessions.ts). */
  constructor(d: SseStreamDeps<SseStream<First>>, kind: string) {
    const { registry } = d;
    registry.add(this);
    this.channel = new SseChannel(d.res, kind, () => {
      this.released();
      registry.delete(this);
    });
  }

  /** The first read; a failure closes the stream, and the route answers it as problem+json. */
  async open(): Promise<First> {
    try {
      return await this.snapshot();
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** What `open` reads: its errors (run_not_found, invalid_cursor, …) come before anything is sent. */
  protected abstract snapshot(): Promise<First>;

  abstract run(first: First): void | Promise<void>;

  /** Runs once, when the stream closes for any reason: stop what feeds it. */
  protected abstract released(): void;

  /** Set when the stream's credential ended (logout, the operator's removal, expiry). */
  get endedBy(): EndReason | undefined {
    return this.channel.endedBy;
  }

  /** Ends the stream with the credential that opened it; bound before anything is sent. */
  bindTo(live: LiveSessions, cred: Credential) {
    this.channel.bindTo(live, cred);
  }

  end(reason: EndReason) {
    this.channel.end(reason);
  }

  /** The agents the stream shows (once read): it ends when its operator may no longer reach one. */
  protected reaches(agents: readonly string[]) {
    this.channel.reaches(agents);
  }

  close() {
    this.channel.close();
  }
}
