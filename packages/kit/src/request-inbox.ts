import {
  createInbox,
  errors as natsErrors,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";

interface Pending {
  subject: string;
  resolve(msg: Msg): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * Request/reply over one reply subscription per connection (`<inbox prefix>.<nuid>.<n>`), as
 * nats.js' own `request` does, without its per-request garbage: it builds a request object, a
 * timer object, a random token, and an Error (with its stack) that every successful reply throws
 * away. What its `request` answers, this answers alike: the reply, NoRespondersError, TimeoutError,
 * the server's PermissionViolationError for the subject, RequestError when the connection closes.
 */
class RequestInbox {
  readonly #prefix: string;
  readonly #pending = new Map<string, Pending>();
  readonly #sub: Subscription;
  #seq = 0;
  #closed = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly onClose: () => void,
  ) {
    // The connection's own prefix: bus permissions allow each service replies on its prefix only.
    const prefix = (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
    this.#prefix = `${createInbox(prefix)}.`;
    this.#sub = nc.subscribe(`${this.#prefix}*`, { callback: (err, msg) => this.#dispatch(err, msg) });
    void this.#sub.closed.then(
      (err) => this.#close(err ?? undefined),
      (err: unknown) => this.#close(err as Error),
    );
    void this.#watchPermissions();
  }

  request(subject: string, data: Uint8Array, timeoutMs: number, headers: MsgHdrs): Promise<Msg> {
    return new Promise<Msg>((resolve, reject) => {
      if (this.#closed) {
        reject(new natsErrors.RequestError("connection closed"));
        return;
      }
      const token = (++this.#seq).toString(36);
      const timer = setTimeout(() => {
        this.#pending.delete(token);
        reject(new natsErrors.TimeoutError());
      }, timeoutMs);
      this.#pending.set(token, { subject, resolve, reject, timer });
      try {
        this.nc.publish(subject, data, { reply: `${this.#prefix}${token}`, headers });
      } catch (err) {
        this.#settle(token);
        reject(err as Error);
      }
    });
  }

  #settle(token: string): Pending | undefined {
    const p = this.#pending.get(token);
    if (!p) return undefined;
    this.#pending.delete(token);
    clearTimeout(p.timer);
    return p;
  }

  #dispatch(err: Error | null, msg: Msg): void {
    if (err) {
      // The reply subscription itself was refused or ended: nothing pending can be answered.
      this.#close(err);
      return;
    }
    const p = this.#settle(msg.subject.slice(this.#prefix.length));
    if (!p) return; // late, after its timeout
    // The server's answer when no one subscribes to the subject: an empty message with status 503.
    if (msg.data.length === 0 && msg.headers?.code === 503) p.reject(new natsErrors.NoRespondersError(p.subject));
    else p.resolve(msg);
  }

  /** A publish the server refused is reported on the connection; it fails the oldest request to that subject. */
  async #watchPermissions(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (this.#closed) return;
      if (s.type !== "error" || !(s.error instanceof natsErrors.PermissionViolationError)) continue;
      if (s.error.operation !== "publish") continue;
      for (const [token, p] of this.#pending) {
        if (p.subject !== s.error.subject) continue;
        this.#settle(token);
        p.reject(new natsErrors.RequestError(s.error.message, { cause: s.error }));
        break;
      }
    }
  }

  #close(cause: Error | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onClose();
    if (!this.#sub.isClosed()) this.#sub.unsubscribe();
    const err = new natsErrors.RequestError("connection closed", cause ? { cause } : undefined);
    for (const token of [...this.#pending.keys()]) this.#settle(token)?.reject(err);
  }
}

const inboxes = new WeakMap<NatsConnection, RequestInbox>();

/** One request: resolves with the reply, rejects with nats.js' own error types (see busError). */
export function request(
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  timeoutMs: number,
  headers: MsgHdrs,
): Promise<Msg> {
  let inbox = inboxes.get(nc);
  if (!inbox) {
    const made = new RequestInbox(nc, () => {
      if (inboxes.get(nc) === made) inboxes.delete(nc);
    });
    inboxes.set(nc, made);
    inbox = made;
  }
  return inbox.request(subject, data, timeoutMs, headers);
}
