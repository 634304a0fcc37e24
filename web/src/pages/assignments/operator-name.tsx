/**
 * An operator by name where the API gives only its id (e.g. an assignment's created_by). Ids that
 * are not operator ids (a system actor) and operators that are gone show as given.
 */
import { ULID_RE } from "@orch/contracts/rules/ids";
import { isStatus } from "../../api/client";
import { useOperator } from "../../api/operators";

export function OperatorName({ id }: { id: string }) {
  const isOperatorId = ULID_RE.test(id);
  const operator = useOperator(id, isOperatorId);
  if (!isOperatorId) return <>{id}</>;
  if (operator.data) return <span title={id}>{operator.data.name}</span>;
  // Not known (yet): a neutral word, never the raw id where a name belongs.
  // Gone (404) says so; any other failure says nothing it does not know.
  return (
    <span title={id}>
      {isStatus(operator.error, 404) ? "a removed operator" : operator.isError ? "an operator" : "…"}
    </span>
  );
}
