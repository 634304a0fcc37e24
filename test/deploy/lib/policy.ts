// Deployment policy of the orchestrator, checked on rendered manifests. Each violation names the
// rule, so tests can assert exactly which rules a bad manifest breaks.
import type { K8sObject } from "./kustomize.js";
import { describe } from "./schemas.js";

export type Rule =
  | "probes"
  | "resources"
  | "run-as-non-root"
  | "read-only-root-fs"
  | "no-privilege-escalation"
  | "drop-all-capabilities"
  | "seccomp-runtime-default"
  | "image-tag"
  | "secret-env"
  | "no-secret-values"
  | "health-port"
  | "tmp-volume";

export interface Violation {
  rule: Rule;
  object: string;
  container?: string;
  message: string;
}

const WORKLOADS = new Set(["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"]);
const PROBED = new Set(["Deployment", "StatefulSet"]);

export function podSpecOf(o: K8sObject): any | undefined {
  if (o.kind === "CronJob") return o.spec?.jobTemplate?.spec?.template?.spec;
  if (WORKLOADS.has(o.kind)) return o.spec?.template?.spec;
  if (o.kind === "Pod") return o.spec;
  return undefined;
}

/** Splits an image reference into name, tag and digest (registry ports are not tags). */
export function parseImage(image: string): { name: string; tag?: string; digest?: string } {
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const slash = rest.lastIndexOf("/");
  const colon = rest.lastIndexOf(":");
  if (colon > slash) return { name: rest.slice(0, colon), tag: rest.slice(colon + 1), ...(digest ? { digest } : {}) };
  return { name: rest, ...(digest ? { digest } : {}) };
}

/** Env names that must come from a Secret, never a literal value. */
const SECRET_ENV = /(PASSWORD|PASSWD|SECRET|TOKEN|_KEYS?$|_KEY_|DATABASE_URL|NATS_URL|CREDENTIALS)/;

export function checkPolicy(objects: K8sObject[]): Violation[] {
  const out: Violation[] = [];
  for (const o of objects) {
    const obj = describe(o);
    if (o.kind === "Secret") {
      const d = (o as { data?: object; stringData?: object }).data ?? {};
      const sd = (o as { stringData?: object }).stringData ?? {};
      if (Object.keys(d).length || Object.keys(sd).length) {
        out.push({
          rule: "no-secret-values",
          object: obj,
          message: "a Secret with values is committed; reference Secrets created out of band",
        });
      }
    }
    const pod = podSpecOf(o);
    if (!pod) continue;
    const psc = pod.securityContext ?? {};
    const containers: any[] = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
    const isOrchService = o.metadata.labels?.["app.kubernetes.io/part-of"] === "orch" && o.kind === "Deployment";
    for (const c of containers) {
      const v = (rule: Rule, message: string) => out.push({ rule, object: obj, container: c.name, message });
      const csc = c.securityContext ?? {};
      const isInit = (pod.initContainers ?? []).includes(c);

      if (PROBED.has(o.kind) && !isInit) {
        if (!c.livenessProbe) v("probes", "no livenessProbe");
        if (!c.readinessProbe) v("probes", "no readinessProbe");
      }

      const r = c.resources ?? {};
      for (const kind of ["requests", "limits"] as const) {
        for (const res of ["cpu", "memory"] as const) {
          if (r[kind]?.[res] === undefined) v("resources", `no resources.${kind}.${res}`);
        }
      }

      const nonRoot = csc.runAsNonRoot ?? psc.runAsNonRoot;
      const uid = csc.runAsUser ?? psc.runAsUser;
      if (nonRoot !== true) v("run-as-non-root", "runAsNonRoot is not true");
      if (uid === 0) v("run-as-non-root", "runAsUser is 0 (root)");

      if (csc.readOnlyRootFilesystem !== true) v("read-only-root-fs", "readOnlyRootFilesystem is not true");
      if (csc.allowPrivilegeEscalation !== false) v("no-privilege-escalation", "allowPrivilegeEscalation is not false");
      if (!(csc.capabilities?.drop ?? []).includes("ALL"))
        v("drop-all-capabilities", "capabilities.drop does not include ALL");
      if (csc.privileged === true) v("no-privilege-escalation", "privileged container");
      const seccomp = csc.seccompProfile?.type ?? psc.seccompProfile?.type;
      if (seccomp !== "RuntimeDefault" && seccomp !== "Localhost")
        v("seccomp-runtime-default", "seccompProfile is not RuntimeDefault");

      const image: string | undefined = c.image;
      if (!image) v("image-tag", "no image");
      else {
        const { tag, digest } = parseImage(image);
        if (!tag && !digest) v("image-tag", `image ${image} has no tag (means latest)`);
        if (tag === "latest") v("image-tag", `image ${image} uses the latest tag`);
      }

      for (const e of c.env ?? []) {
        if (SECRET_ENV.test(e.name) && e.value !== undefined)
          v("secret-env", `env ${e.name} has a literal value; use valueFrom.secretKeyRef`);
      }

      if (isOrchService && !isInit) {
        const ports = new Map<string, number>((c.ports ?? []).map((p: any) => [p.name, p.containerPort]));
        const env = new Map<string, string>(
          (c.env ?? []).filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]),
        );
        const port = (p: unknown) => (typeof p === "number" ? p : ports.get(String(p)));
        const healthPort = Number(env.get("ORCH_HEALTH_PORT"));
        if (!healthPort) v("health-port", "ORCH_HEALTH_PORT is not set");
        for (const [probe, path] of [
          ["livenessProbe", "/livez"],
          ["readinessProbe", "/readyz"],
        ] as const) {
          const get = c[probe]?.httpGet;
          if (!get) continue; // reported by "probes"
          if (get.path !== path) v("health-port", `${probe} path is ${get.path}, expected ${path}`);
          if (port(get.port) !== healthPort || healthPort !== 9090) {
            v(
              "health-port",
              `${probe} port ${get.port} is not the health port 9090 (ORCH_HEALTH_PORT=${env.get("ORCH_HEALTH_PORT")})`,
            );
          }
        }
        const mounts: any[] = c.volumeMounts ?? [];
        const tmp = mounts.find((m) => m.mountPath === "/tmp");
        const vol = tmp && (pod.volumes ?? []).find((x: any) => x.name === tmp.name);
        if (!vol?.emptyDir) v("tmp-volume", "no emptyDir mounted at /tmp (the root filesystem is read-only)");
      }
    }
  }
  return out;
}
