import t from "tap";
import { ControlStripper, stripsControl } from "../src/terminal-control.js";

// What a remote PTY sends for a screen is removed from piped output; the text stays byte for byte.

const strip = (...chunks: string[]) => {
  const s = new ControlStripper();
  return Buffer.concat([...chunks.map((c) => s.push(Buffer.from(c, "utf8"))), s.end()]).toString("utf8");
};

t.test("unit: bracketed paste, colours, cursor moves and titles go; CRLF becomes LF", async (t) => {
  t.equal(strip("\x1b[?2004hroot@web-1:~# uptime\r\n\x1b[?2004l\r"), "root@web-1:~# uptime\n\r");
  t.equal(strip("\x1b[1;32mok\x1b[0m done\r\n"), "ok done\n");
  t.equal(strip("\x1b]0;root@web-1: ~\x07$ "), "$ ", "OSC title ended by BEL");
  t.equal(strip("\x1b]2;title\x1b\\$ "), "$ ", "OSC ended by ST (ESC \\)");
  t.equal(strip("\x1bP1$r0m\x1b\\x"), "x", "DCS string");
  t.equal(strip("\x1b(Ba\x1b=b\x1b>c\x1b7d\x1b8"), "abcd", "charset selection and two-byte sequences");
  t.equal(strip("\x1b[2J\x1b[H\x1b[Kline"), "line");
});

t.test("unit: text passes unchanged, UTF-8 and a lone CR included", async (t) => {
  t.equal(strip("héllo wörld ✓ 日本\n"), "héllo wörld ✓ 日本\n");
  t.equal(strip("10%\r50%\r100%\n"), "10%\r50%\r100%\n", "a progress line redrawn with CR keeps its CRs");
  t.equal(strip("tab\there\n"), "tab\there\n");
  t.equal(strip("end\r"), "end\r", "a CR held back at the end is written when the stream ends");
});

t.test("unit: a sequence split across chunks is still recognised", async (t) => {
  t.equal(strip("a\x1b", "[?20", "04hb"), "ab");
  t.equal(strip("a\x1b]0;ti", "tle\x1b", "\\b"), "ab");
  t.equal(strip("line\r", "\nnext"), "line\nnext");
  const bytes = Buffer.from("\x1b[31mé\x1b[0m\r\n", "utf8");
  const s = new ControlStripper();
  const out = Buffer.concat([...[...bytes].map((b) => s.push(Uint8Array.of(b))), s.end()]);
  t.equal(out.toString("utf8"), "é\n", "one byte at a time");
});

t.test("unit: stripped only when stdout is not a terminal and --raw is not given", async (t) => {
  t.equal(stripsControl({ isTTY: true }, undefined), false);
  t.equal(stripsControl({ isTTY: true }, true), false);
  t.equal(stripsControl({}, undefined), true);
  t.equal(stripsControl({ isTTY: false }, true), false);
});
