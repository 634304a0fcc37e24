import t from "tap";
import { loginLinkLines, shouldOpenBrowser } from "../src/format/console.js";

const url = "https://orch.example.com/login#code=abc123";

t.test("the link is printed alone on the first line, then its limits", async (t) => {
  const lines = loginLinkLines({ url, expires_at: "2026-01-02T03:04:05.000Z" });
  t.equal(lines[0], url, "copyable as a whole line");
  t.match(lines[1], /^valid for 60 s, single use \(expires 2026-01-02T03:04:05\.000Z\)/);
  t.equal(lines.length, 2);
});

t.test("a browser is started only in a graphical session and without --no-open", async (t) => {
  t.equal(shouldOpenBrowser(url, { open: true, env: { DISPLAY: ":0" } }), true, "X11");
  t.equal(shouldOpenBrowser(url, { open: true, env: { WAYLAND_DISPLAY: "wayland-0" } }), true, "Wayland");
  t.equal(shouldOpenBrowser(url, { open: false, env: { DISPLAY: ":0" } }), false, "--no-open");
  t.equal(shouldOpenBrowser(url, { open: true, env: {} }), false, "no display: a server over ssh");
  t.equal(shouldOpenBrowser(url, { open: true, env: { DISPLAY: "" } }), false, "an empty DISPLAY is none");
});

t.test("only http(s) links are handed to xdg-open", async (t) => {
  const env = { DISPLAY: ":0" };
  t.equal(shouldOpenBrowser("http://localhost:8080/login#code=x", { open: true, env }), true);
  t.equal(shouldOpenBrowser("file:///etc/passwd", { open: true, env }), false);
  t.equal(shouldOpenBrowser("javascript:alert(1)", { open: true, env }), false);
  t.equal(shouldOpenBrowser("not a url", { open: true, env }), false);
});
