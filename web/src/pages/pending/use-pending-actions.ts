import { useState } from "react";
import { type Agent, useApproveAgent, useDeleteAgent, useRejectAgent } from "../../api/agents";
import { checkAgentName } from "../../lib/rules";

export type RowState = { busy?: boolean; error?: unknown; nameError?: string };

/**
 * The state of the pending-approvals page: typed names, the selection, each row's progress and
 * error, and the actions, one by one or in bulk (`bulk` reports how many the API accepted).
 */
export function usePendingActions(agents: Agent[]) {
  const [names, setNames] = useState<Record<string, string>>({});
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [rows, setRows] = useState<Record<string, RowState>>({});
  const [done, setDone] = useState<string | undefined>();
  const approve = useApproveAgent();
  const reject = useRejectAgent();
  const remove = useDeleteAgent();

  const setRow = (id: string, s: RowState) => setRows((r) => ({ ...r, [id]: s }));
  const visible = new Set(agents.map((a) => a.node_id));
  const chosen = [...selected].filter((id) => visible.has(id));

  /** Runs one row's action; true when the API accepted it. */
  async function run(id: string, action: () => Promise<unknown>): Promise<boolean> {
    setRow(id, { busy: true });
    try {
      await action();
      setRow(id, {});
      setSelected((s) => {
        const next = new Set(s);
        next.delete(id);
        return next;
      });
      return true;
    } catch (error) {
      setRow(id, { error });
      return false;
    }
  }

  async function approveOne(id: string): Promise<boolean> {
    const name = (names[id] ?? "").trim();
    const v = checkAgentName(name);
    if (v) {
      setRow(id, { nameError: `Name ${v.message}` });
      return false;
    }
    return run(id, () => approve.mutateAsync({ nodeId: id, name }));
  }

  async function bulk(ids: string[], one: (id: string) => Promise<boolean>, verb: string) {
    setDone(undefined);
    let ok = 0;
    for (const id of ids) if (await one(id)) ok++;
    setDone(`${verb} ${ok} of ${ids.length} agent${ids.length === 1 ? "" : "s"}.`);
  }

  const rejectOne = (id: string) => run(id, () => reject.mutateAsync({ nodeId: id }));
  const deleteOne = (id: string) => run(id, () => remove.mutateAsync({ nodeId: id }));

  return {
    names,
    setNames,
    selected,
    setSelected,
    rows,
    done,
    visible,
    chosen,
    approveOne,
    rejectOne,
    deleteOne,
    bulk,
  };
}
