import t from "tap";
import { diffHtml } from "../src/lib/diff-html.js";
import { splitDiff } from "../src/lib/diff-split.js";

const FILE_DIFF = [
  "# mode 0644 -> 0600",
  "--- current",
  "+++ desired",
  "@@ -1,2 +1,2 @@",
  " keep",
  "-old line",
  "+password=***",
  "",
].join("\n");

t.test("a file diff splits into its attribute notes and the unified diff", async (t) => {
  const parts = splitDiff(FILE_DIFF);
  t.same(parts.notes, ["# mode 0644 -> 0600"]);
  t.match(parts.unified, /^--- current\n\+\+\+ desired\n@@ -1,2 \+1,2 @@/);
});

t.test("the agent's real file diff (jsdiff): Index and ==== lines stay with the diff", async (t) => {
  const text = [
    "# mode 0644 -> 0600",
    "Index: /etc/app.conf",
    "===================================================================",
    "--- /etc/app.conf\tcurrent",
    "+++ /etc/app.conf\tdesired",
    "@@ -1,1 +1,1 @@",
    "-a",
    "+b",
    "",
  ].join("\n");
  const parts = splitDiff(text);
  t.same(parts.notes, ["# mode 0644 -> 0600"]);
  t.match(parts.unified, /^Index: \/etc\/app.conf\n=+\n--- /);
  const html = diffHtml(parts.unified ?? "", "unified");
  t.match(html, /d2h-ins/);
  t.match(html, /d2h-del/);
  t.notMatch(html, /Index:|====/, "the header lines are not shown as content");
});

t.test("a non-file description is text, not a diff", async (t) => {
  const parts = splitDiff("create user app\nshell /bin/sh -> /bin/bash\n");
  t.same(parts.notes, ["create user app", "shell /bin/sh -> /bin/bash"]);
  t.equal(parts.unified, undefined);
  t.same(splitDiff("").notes, []);
});

t.test("a bare hunk gets headers so it still renders", async (t) => {
  const parts = splitDiff("@@ -0,0 +1 @@\n+x\n");
  t.same(parts.notes, []);
  t.match(parts.unified, /^--- current\n\+\+\+ desired\n@@/);
});

t.test("added and removed lines are marked; masked values stay masked", async (t) => {
  const html = diffHtml(splitDiff(FILE_DIFF).unified ?? "", "unified");
  t.match(html, /d2h-ins/);
  t.match(html, /d2h-del/);
  t.match(html, /\*\*\*/);
  const split = diffHtml(splitDiff(FILE_DIFF).unified ?? "", "split");
  t.match(split, /d2h-file-side-diff/);
  t.notMatch(html, /d2h-file-side-diff/);
});

t.test("HTML in a diff is escaped, never markup", async (t) => {
  const evil = [
    "--- current",
    "+++ <img src=x onerror=alert(2)>",
    "@@ -1 +1 @@",
    '-<script>alert("x")</script>',
    '+<b onclick="steal()">bold</b>',
    "",
  ].join("\n");
  const html = diffHtml(evil, "unified");
  t.notMatch(html, /<script/i);
  t.notMatch(html, /<img/i);
  t.notMatch(html, /<b /);
  // Word highlighting wraps fragments in <ins>/<del>; the text between them is escaped.
  const text = html.replace(/<\/?(ins|del)>/g, "");
  t.match(text, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;&#x2F;script&gt;/);
  t.match(text, /&lt;b onclick=&quot;steal\(\)&quot;&gt;bold/);
  t.match(text, /&lt;img src=x onerror=alert\(2\)&gt;/);
  const split = diffHtml(evil, "split");
  t.notMatch(split, /<script/i);
  t.notMatch(split, /<img/i);
});
