/**
 * Terminal control a remote shell sends for the screen, removed when `orchctl ssh` / `terminal
 * attach` write to a pipe or a file: a remote PTY cannot know it is not talking to a terminal, so
 * it sends bracketed-paste toggles (`ESC[?2004h`), colours, cursor moves and window titles, and
 * ends lines with CRLF. `--raw` keeps the bytes exactly as sent.
 *
 * A byte-level state machine, so a sequence split across WebSocket frames is still recognised: the
 * state carries over between chunks. ESC (0x1b) never occurs inside a UTF-8 multi-byte character,
 * so text passes through byte for byte.
 */

const ESC = 0x1b;
const BEL = 0x07;
const CR = 0x0d;
const LF = 0x0a;
const BACKSLASH = 0x5c;

type State = "text" | "cr" | "esc" | "escIntermediate" | "csi" | "string" | "stringEsc";

/** After ESC: these open a control string (OSC `]`, DCS `P`, SOS `X`, PM `^`, APC `_`) that runs to BEL or ESC \. */
const STRING_OPENERS = new Set([0x5d, 0x50, 0x58, 0x5e, 0x5f]);

export class ControlStripper {
  private state: State = "text";

  /** The printable part of `chunk` (control sequences dropped, CRLF as LF). */
  push(chunk: Uint8Array): Buffer {
    const out: number[] = [];
    for (const b of chunk) this.step(b, out);
    return Buffer.from(out);
  }

  /** What is held back at the end of the stream: a CR that turned out not to start a CRLF. */
  end(): Buffer {
    const held = this.state === "cr" ? Buffer.from([CR]) : Buffer.alloc(0);
    this.state = "text";
    return held;
  }

  private step(b: number, out: number[]): void {
    switch (this.state) {
      case "text":
        if (b === ESC) this.state = "esc";
        else if (b === CR) this.state = "cr";
        else out.push(b);
        return;
      case "cr":
        this.state = "text";
        if (b === LF) out.push(LF);
        else {
          // A lone CR (a progress line redrawn in place) is the program's output, not the PTY's.
          out.push(CR);
          this.step(b, out);
        }
        return;
      case "esc":
        if (b === 0x5b) this.state = "csi";
        else if (STRING_OPENERS.has(b)) this.state = "string";
        else if (b >= 0x20 && b <= 0x2f) this.state = "escIntermediate";
        else if (b === ESC) this.state = "esc";
        else this.state = "text"; // a two-byte sequence (ESC =, ESC 7, ESC M, …) ends here
        return;
      case "escIntermediate":
        if (b < 0x20 || b > 0x2f) this.state = "text"; // ESC ( B and the like: the final byte ends it
        return;
      case "csi":
        if (b >= 0x40 && b <= 0x7e) this.state = "text"; // parameters and intermediates come before the final byte
        return;
      case "string":
        if (b === BEL) this.state = "text";
        else if (b === ESC) this.state = "stringEsc";
        return;
      case "stringEsc":
        if (b === BACKSLASH) this.state = "text";
        else {
          // ESC without the backslash cancels the string and starts a new sequence.
          this.state = "esc";
          this.step(b, out);
        }
        return;
    }
  }
}

/** Whether output to `stdout` is stripped: not a terminal, and --raw not given. */
export const stripsControl = (stdout: { isTTY?: boolean }, raw: boolean | undefined) => !stdout.isTTY && !raw;
