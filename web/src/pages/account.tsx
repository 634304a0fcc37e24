/** The signed-in operator: who they are, their passkeys (register, remove) and "Sign out". */
import { type FormEvent, useState } from "react";
import { type Passkey, usePasskeys, useRegisterPasskey, useRemovePasskey } from "../api/passkeys";
import { useSession, useSignOut } from "../api/session";
import { Badge, EmptyState } from "../ui/banner";
import { Field } from "../ui/field";
import { QueryStatus } from "../ui/loading";
import { Page, Section } from "../ui/page";
import { fieldError, ProblemMessage } from "../ui/problem";
import { Time } from "../ui/time";

const NAME_MAX = 64;

function Identity() {
  const { operator } = useSession();
  return (
    <Section title="Operator">
      <dl className="props card">
        <dt>Name</dt>
        <dd>{operator.name}</dd>
        <dt>Role</dt>
        <dd>{operator.role}</dd>
        <dt>Scope</dt>
        <dd>
          {operator.agent_selector ? (
            <code>{operator.agent_selector}</code>
          ) : (
            <span className="muted">all agents (unscoped)</span>
          )}
        </dd>
        <dt>ID</dt>
        <dd className="mono">{operator.id}</dd>
        <dt>Since</dt>
        <dd>
          <Time value={operator.created_at} />
        </dd>
      </dl>
    </Section>
  );
}

function RegisterPasskey() {
  const register = useRegisterPasskey();
  const [name, setName] = useState("");
  const [touched, setTouched] = useState(false);
  const trimmed = name.trim();
  const localError =
    trimmed.length === 0
      ? "Give the passkey a name."
      : trimmed.length > NAME_MAX
        ? `At most ${NAME_MAX} characters.`
        : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (localError) return;
    register.mutate(trimmed, {
      onSuccess: () => {
        setName("");
        setTouched(false);
      },
    });
  };
  return (
    <form className="stack" onSubmit={submit} noValidate>
      <div className="toolbar">
        <Field label="Passkey name" error={(touched ? localError : undefined) ?? fieldError(register.error, "name")}>
          <input
            type="text"
            value={name}
            maxLength={NAME_MAX}
            autoComplete="off"
            onChange={(e) => setName(e.target.value)}
          />
        </Field>
        <button type="submit" className="btn btn-primary" disabled={register.isPending}>
          Register a passkey
        </button>
      </div>
      {register.isPending ? (
        <p className="loading" role="status">
          Waiting for your authenticator…
        </p>
      ) : null}
      {register.isSuccess ? (
        <p role="status" className="muted">
          Registered “{register.data.name}”.
        </p>
      ) : null}
      {register.error && !fieldError(register.error, "name") ? <ProblemMessage error={register.error} /> : null}
    </form>
  );
}

function PasskeyRow({ passkey }: { passkey: Passkey }) {
  const remove = useRemovePasskey();
  return (
    <li>
      <div className="list-main">
        <div>
          <strong>{passkey.name}</strong> {passkey.backed_up ? <Badge tone="info">synced</Badge> : null}
        </div>
        <div className="meta">
          <span>
            Added <Time value={passkey.created_at} />
          </span>
          <span>
            Last used <Time value={passkey.last_used_at} fallback="never" />
          </span>
          {passkey.transports.length ? <span>{passkey.transports.join(", ")}</span> : null}
        </div>
        <ProblemMessage error={remove.error} />
      </div>
      <button
        type="button"
        className="btn btn-danger"
        disabled={remove.isPending}
        onClick={() => remove.mutate(passkey.id)}
      >
        Remove
      </button>
    </li>
  );
}

function Passkeys() {
  const passkeys = usePasskeys();
  return (
    <Section title="Passkeys">
      <p className="muted">
        A passkey signs you in to this console without a link from the CLI. Name each one so you can tell them apart
        (e.g. “work laptop”).
      </p>
      <RegisterPasskey />
      <QueryStatus query={passkeys}>
        {passkeys.data?.length ? (
          <ul className="list" aria-label="Passkeys">
            {passkeys.data.map((p) => (
              <PasskeyRow key={p.id} passkey={p} />
            ))}
          </ul>
        ) : (
          <EmptyState title="No passkeys yet">Register one above to sign in without the CLI.</EmptyState>
        )}
      </QueryStatus>
    </Section>
  );
}

export default function AccountPage() {
  const signOut = useSignOut();
  return (
    <Page
      title="Account"
      actions={
        <button type="button" className="btn" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
          Sign out
        </button>
      }
    >
      <Identity />
      <Passkeys />
    </Page>
  );
}
