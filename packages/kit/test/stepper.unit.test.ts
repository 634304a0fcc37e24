import t from "tap";
import { createStepper, type Transition } from "../src/stepper.js";

type Event = { type: "add"; n: number } | { type: "echo"; n: number };
type Effect = { type: "log"; text: string } | { type: "raise"; n: number };

const step = (total: number, e: Event): Transition<number, Effect> =>
  e.type === "add"
    ? {
        state: total + e.n,
        effects: [
          { type: "raise", n: e.n },
          { type: "log", text: `added ${e.n}` },
        ],
      }
    : { state: total, effects: [{ type: "log", text: `echo ${e.n} at ${total}` }] };

t.test("an event raised by an effect waits until the current step's effects are done", async (t) => {
  const log: string[] = [];
  const machine = createStepper<number, Event, Effect>(0, step, (f) => {
    if (f.type === "raise") machine.dispatch({ type: "echo", n: f.n });
    else log.push(f.text);
  });
  machine.dispatch({ type: "add", n: 2 });
  machine.dispatch({ type: "add", n: 3 });
  t.equal(machine.state, 5);
  t.same(log, ["added 2", "echo 2 at 2", "added 3", "echo 3 at 5"]);
});

t.test("a throwing effect does not wedge the loop", async (t) => {
  let fail = true;
  const seen: string[] = [];
  const machine = createStepper<number, Event, Effect>(0, step, (f) => {
    if (f.type !== "log") return;
    if (fail) {
      fail = false;
      throw new Error("boom");
    }
    seen.push(f.text);
  });
  t.throws(() => machine.dispatch({ type: "add", n: 1 }), /boom/);
  machine.dispatch({ type: "add", n: 1 });
  t.equal(machine.state, 2);
  t.same(seen, ["added 1"]);
});
