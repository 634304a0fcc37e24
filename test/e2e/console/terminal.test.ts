import t from "tap";
import { eventually, waitMs } from "@orch/kit/testing";
import { consoleStack, expectNoA11yViolations, pageFetch, shoot, signInWithLink } from "../lib/browser.js";

// The browser terminal against a real orch-agent and a real PTY: open it from the agent page, type
// into xterm.js and read its rows, resize the window and see `stty size` change, exit → closed;
// play the recording in the page with its SHA-256 checked; reload → the same session re-attached;
// an agent killed mid-session → "agent disconnected", and what was recorded still plays.
const stack = await consoleStack(t, { agents: 1 });
const [nodeId] = stack.nodeIds as [string];
async function approve(id: string, name: string) {
  await eventually(async () => (await stack.api("GET", `/api/v1/agents/${id}`)).body?.connected === true, 30_000);
  const r = await stack.api("POST", `/api/v1/agents/${id}`, { status: "approved", name });
  if (r.status !== 200) throw new Error(`approving ${id}: ${r.text}`);
}
await approve(nodeId, "web-1");

const { page, guard } = await stack.newPage();
await signInWithLink(page, stack, stack.system.admin);

/** What xterm.js shows (its DOM rows), one line per row. */
const screen = async () =>
  (await page.getByTestId("terminal").locator(".xterm-rows > div").allTextContents())
    .join("\n")
    .replace(/\u00a0/g, " ");
const status = async () => ((await page.getByTestId("terminal-status").textContent()) ?? "").trim();
const waitStatus = (want: string, ms = 20_000) => eventually(async () => (await status()) === want, ms);
async function typeLine(line: string) {
  await page.getByTestId("terminal").click();
  await page.keyboard.type(line);
  await page.keyboard.press("Enter");
}
/** Waits for `re` in the terminal's rows; returns the match. */
const seen = (re: RegExp, ms = 15_000) => eventually(async () => re.exec(await screen()) ?? undefined, ms);
const sessionOfUrl = () => /^\/terminal\/([0-9A-Z]+)$/.exec(new URL(page.url()).pathname)?.[1];
const session = async (id: string) => (await stack.api("GET", `/api/v1/terminal/session/${id}`)).body;

let firstSession = "";
let hello = "";

t.test("Open terminal on the agent page attaches xterm.js to a shell on the agent", async (t) => {
  await page.goto(`/agents/${nodeId}`);
  await page.getByRole("heading", { level: 1, name: "web-1" }).waitFor();
  await page.getByRole("link", { name: "Open terminal", exact: true }).click();
  await page.waitForURL((u) => u.pathname.startsWith("/terminal/"), { timeout: waitMs(30_000) });
  firstSession = sessionOfUrl() ?? "";
  t.match(firstSession, /^[0-9A-Z]{26}$/, "the URL became /terminal/:sessionId");
  await waitStatus("open");
  t.equal(await status(), "open");
  await page.getByRole("heading", { level: 1, name: "Terminal web-1" }).waitFor();
  t.match(await session(firstSession), { status: "open", node_name: "web-1" });
  const idle = page.getByTestId("terminal-idle");
  await idle.waitFor();
  t.match(await idle.textContent(), /closes after 15 min without input or output/, "the page says when it closes");

  await typeLine("echo hello-$RANDOM; stty size");
  const m = await seen(/hello-(\d+) *\n *(\d+) (\d+)/);
  hello = `hello-${m[1]}`;
  const [rows, cols] = [Number(m[2]), Number(m[3])];
  t.ok(rows > 5 && cols > 20, `stty size in the PTY: ${rows} ${cols}`);

  await page.setViewportSize({ width: 700, height: 520 });
  // The resize frame and the typed bytes travel on different subjects: ask until the PTY has it.
  const resized = await eventually(async () => {
    const marker = `resized${Math.floor(Math.random() * 1e6)}`;
    await typeLine(`echo ${marker}-$((1+1)); stty size`);
    const r = await seen(new RegExp(`${marker}-2 *\\n *(\\d+) (\\d+)`));
    const size = [Number(r[1]), Number(r[2])] as const;
    return size[0] !== rows || size[1] !== cols ? size : undefined;
  }, 20_000);
  t.ok(resized[0] < rows || resized[1] < cols, `a smaller window, a smaller PTY: ${resized.join(" ")}`);
  await page.setViewportSize({ width: 1280, height: 800 });

  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "terminal");
  t.equal((await shoot(page, "terminal")).length, 4);
  guard.check(t, "terminal (open)");
});

t.test("exit closes the session: closed (exit 0)", async (t) => {
  await typeLine("exit");
  await waitStatus("closed (exit 0)");
  t.equal(await status(), "closed (exit 0)");
  const s = await eventually(async () => {
    const x = await session(firstSession);
    return x.status === "closed" && x.sha256 ? x : undefined;
  }, 20_000);
  t.match(s, { status: "closed", exit_code: 0, close_reason: "exit" });
  guard.check(t, "terminal (closed)");
});

t.test("Sessions lists it; its recording plays the echo and its SHA-256 matches", async (t) => {
  await page.goto("/sessions");
  await page.getByRole("heading", { level: 1, name: "Sessions" }).waitFor();
  const link = page.getByRole("link", { name: new RegExp(`Session ${firstSession}`) });
  await link.waitFor({ timeout: waitMs(15_000) });
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "sessions");
  t.equal((await shoot(page, "sessions")).length, 4);
  await link.click();
  await page.waitForURL((u) => u.pathname === `/sessions/${firstSession}`);
  await page.getByRole("heading", { level: 1, name: "Session web-1" }).waitFor();
  await eventually(async () => ((await page.getByTestId("player").textContent()) ?? "").includes(hello), 30_000);
  t.pass(`the player shows ${hello}`);
  await eventually(async () => (await page.getByTestId("sha256-status").textContent()) === "SHA-256 matches", 15_000);
  t.equal(await page.getByTestId("sha256-status").textContent(), "SHA-256 matches");

  const download = page.getByRole("link", { name: "Download", exact: true });
  const href = (await download.getAttribute("href")) ?? "";
  t.match(href, new RegExp(`/${firstSession}/transcript$`));
  const file = await pageFetch(page, "GET", href);
  t.equal(file.status, 200);
  t.match(String(file.body), /^\{"version":2/, "an asciicast v2 file");

  await page.getByLabel("Speed", { exact: true }).selectOption("2");
  t.equal(new URL(page.url()).searchParams.get("speed"), "2", "the speed is in the URL");
  await page.getByRole("button", { name: "Restart", exact: true }).click();
  await page.waitForLoadState("networkidle").catch(() => {});
  await expectNoA11yViolations(t, page, "recording");
  t.equal((await shoot(page, "recording")).length, 4);
  guard.check(t, "sessions and recording");
});

t.test("a reload re-attaches to the same session with a new ticket", async (t) => {
  await page.goto(`/agents/${nodeId}/terminal`);
  await page.waitForURL((u) => u.pathname.startsWith("/terminal/"), { timeout: waitMs(30_000) });
  const id = sessionOfUrl()!;
  t.not(id, firstSession, "a new session");
  await waitStatus("open");
  await typeLine("export ORCH_MARK=kept-$((20+22))");
  await page.reload();
  await page.getByTestId("terminal-status").waitFor();
  await waitStatus("open");
  t.equal(sessionOfUrl(), id, "the same session after the reload");
  // The shell is the same process: what was set before the reload is still there.
  await typeLine("echo mark=$ORCH_MARK");
  await seen(/mark=kept-42/);
  t.pass("typed after the reload and saw the same shell answer");
  t.match(await session(id), { status: "open" });
  await typeLine("exit 3");
  await waitStatus("closed (exit 3)");
  t.equal(await status(), "closed (exit 3)");
  guard.check(t, "re-attach");
});

t.test("an agent that disconnects: the terminal says so, the recording up to then plays", async (t) => {
  const { agent, nodeId: id2 } = await stack.spawnAgent();
  await approve(id2, "web-2");
  await page.goto(`/agents/${id2}/terminal`);
  await page.waitForURL((u) => u.pathname.startsWith("/terminal/"), { timeout: waitMs(30_000) });
  const id = sessionOfUrl()!;
  await waitStatus("open");
  await typeLine("echo before-kill-$((2+3))");
  await seen(/before-kill-5/);
  await agent.signal("SIGKILL");
  await waitStatus("agent disconnected");
  t.equal(await status(), "agent disconnected");
  const s = await eventually(async () => {
    const x = await session(id);
    return x.status === "failed" ? x : undefined;
  }, 30_000);
  t.match(s, { status: "failed", close_reason: "agent_lost" });

  await page.goto(`/sessions/${id}`);
  await page.getByRole("heading", { level: 1, name: "Session web-2" }).waitFor();
  await eventually(
    async () => ((await page.getByTestId("player").textContent()) ?? "").includes("before-kill-5"),
    30_000,
  );
  t.pass("the recording plays up to the disconnect");
  const want = s.sha256 ? "SHA-256 matches" : "no checksum";
  await eventually(async () => (await page.getByTestId("sha256-status").textContent()) === want, 15_000);
  t.equal(await page.getByTestId("sha256-status").textContent(), want);
  guard.check(t, "agent disconnected");
});
