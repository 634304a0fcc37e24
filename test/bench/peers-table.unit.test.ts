// The peers bench's verdict and table: a row is "ahead" only when this project beat every peer on
// both wall time and CPU, and a "behind" row names the peer and the figure.
import t from "tap";
import { fmtRatio, formatTable, ratio, verdict } from "../../bench/lib/peers-table.js";

t.test("ratios are peer over this project", async (t) => {
  t.equal(ratio(10, 2), 5);
  t.equal(fmtRatio(ratio(10, 2)), "5.00x");
  t.equal(fmtRatio(ratio(250, 2)), "125.0x");
  t.equal(fmtRatio(ratio(1, 0)), "inf");
});

t.test("ahead needs both figures better than every peer", async (t) => {
  t.same(verdict({ orch: { wallS: 1, cpuS: 1 }, ansible: { wallS: 5, cpuS: 9 }, puppet: { wallS: 2, cpuS: 3 } }), {
    ahead: true,
    behind: [],
  });
  const v = verdict({ orch: { wallS: 1, cpuS: 4 }, ansible: { wallS: 5, cpuS: 9 }, puppet: { wallS: 2, cpuS: 2 } });
  t.equal(v.ahead, false);
  t.same(v.behind, ["puppet CPU 0.50x"]);
});

t.test("a tie is not ahead", async (t) => {
  const v = verdict({ orch: { wallS: 2, cpuS: 1 }, puppet: { wallS: 2, cpuS: 3 } });
  t.equal(v.ahead, false);
  t.same(v.behind, ["puppet wall 1.00x"]);
});

t.test("without this project's figures nothing is ahead", async (t) => {
  t.equal(verdict({ ansible: { wallS: 1, cpuS: 1 } }).ahead, false);
});

t.test("the table has one row per phase with figures, ratios and the verdict", async (t) => {
  const lines = formatTable(
    10,
    ["orch", "ansible", "puppet"],
    [
      {
        phase: "first apply",
        figures: { orch: { wallS: 0.5, cpuS: 1 }, ansible: { wallS: 20, cpuS: 30 }, puppet: { wallS: 10, cpuS: 15 } },
      },
      { phase: "dry run", figures: { orch: { wallS: 0.5, cpuS: 1 }, ansible: { wallS: 20, cpuS: 30 } } },
    ],
  );
  t.equal(lines[0], "N = 10 hosts");
  t.match(lines[1]!, /orch wall s\s+orch CPU s\s+ansible wall s/);
  t.match(
    lines[2]!,
    /^first apply\s+0\.50\s+1\.00\s+20\.00\s+30\.00\s+10\.00\s+15\.00\s+40\.0x\s+30\.0x\s+20\.0x\s+15\.0x\s+ahead$/,
  );
  // puppet did not finish this phase: no figures and no claim about it.
  t.match(lines[3]!, /^dry run .* - +- .*ahead$/);
  t.equal(lines.length, 4);
});

t.test("a table of peers alone has no ratios or verdicts", async (t) => {
  const lines = formatTable(
    2,
    ["ansible", "puppet"],
    [{ phase: "first apply", figures: { ansible: { wallS: 2, cpuS: 3 }, puppet: { wallS: 1, cpuS: 1 } } }],
  );
  t.notMatch(lines.join("\n"), /ahead|behind|x\b/);
});
