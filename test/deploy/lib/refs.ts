// Cross-object checks on rendered manifests: every name or label selector one object uses to
// point at another resolves inside the rendered set (or to what an operator creates from it).
import type { K8sObject } from "./kustomize.js";
import { podSpecOf } from "./policy.js";
import { describe } from "./schemas.js";

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

export function selects(
  sel: Selector | Record<string, string> | undefined,
  labels: Record<string, string> = {},
): boolean {
  if (!sel) return false;
  const s: Selector =
    "matchLabels" in sel || "matchExpressions" in sel
      ? (sel as Selector)
      : { matchLabels: sel as Record<string, string> };
  for (const [k, v] of Object.entries(s.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of s.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
    if (e.operator === "In" && !(has && (e.values ?? []).includes(labels[e.key]!))) return false;
    if (e.operator === "NotIn" && has && (e.values ?? []).includes(labels[e.key]!)) return false;
  }
  return true;
}

/** Pod label sets: from workload templates, plus those operators create (CloudNativePG). */
function podLabelSets(objects: K8sObject[]): Array<{ owner: K8sObject; labels: Record<string, string>; pod?: any }> {
  const out: Array<{ owner: K8sObject; labels: Record<string, string>; pod?: any }> = [];
  for (const o of objects) {
    const pod = podSpecOf(o);
    if (pod) out.push({ owner: o, labels: o.spec?.template?.metadata?.labels ?? {}, pod });
    if (o.kind === "Cluster" && o.apiVersion.startsWith("postgresql.cnpg.io/")) {
      out.push({ owner: o, labels: { "cnpg.io/cluster": o.metadata.name } });
    }
  }
  return out;
}

export interface SecretRef {
  name: string;
  key: string;
  optional: boolean;
  users: string[];
}

/** Every Secret key the manifests read (env secretKeyRef), with the objects that read it. */
export function secretRefs(objects: K8sObject[]): SecretRef[] {
  const refs = new Map<string, SecretRef>();
  for (const o of objects) {
    const pod = podSpecOf(o);
    if (!pod) continue;
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      for (const e of c.env ?? []) {
        const r = e.valueFrom?.secretKeyRef;
        if (!r) continue;
        const id = `${r.name}/${r.key}`;
        const ref: SecretRef = refs.get(id) ?? { name: r.name, key: r.key, optional: r.optional === true, users: [] };
        ref.users.push(describe(o));
        refs.set(id, ref);
      }
    }
  }
  return [...refs.values()].sort((a, b) => `${a.name}/${a.key}`.localeCompare(`${b.name}/${b.key}`));
}

export function checkReferences(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const pods = podLabelSets(objects);
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

  for (const s of byKind("Service")) {
    const sel = s.spec?.selector;
    if (!sel) continue;
    const targets = pods.filter((p) => p.pod && selects(sel, p.labels));
    if (targets.length === 0) {
      problems.push(`${describe(s)}: selector ${JSON.stringify(sel)} matches no pod template`);
      continue;
    }
    for (const p of s.spec.ports ?? []) {
      if (typeof p.targetPort !== "string") continue;
      for (const t of targets) {
        const names = (t.pod.containers ?? []).flatMap((c: any) => (c.ports ?? []).map((x: any) => x.name));
        if (!names.includes(p.targetPort))
          problems.push(`${describe(s)}: targetPort ${p.targetPort} is not a port of ${describe(t.owner)}`);
      }
    }
  }

  for (const pdb of byKind("PodDisruptionBudget")) {
    if (!pods.some((p) => p.pod && selects(pdb.spec?.selector, p.labels)))
      problems.push(`${describe(pdb)}: selector matches no pod template`);
  }

  for (const hpa of byKind("HorizontalPodAutoscaler")) {
    const ref = hpa.spec?.scaleTargetRef ?? {};
    if (!named(ref.kind, ref.name))
      problems.push(`${describe(hpa)}: scaleTargetRef ${ref.kind}/${ref.name} does not exist`);
  }

  for (const ing of byKind("Ingress")) {
    for (const rule of ing.spec?.rules ?? []) {
      for (const path of rule.http?.paths ?? []) {
        const svc = path.backend?.service;
        const target = svc && named("Service", svc.name);
        if (!target) {
          problems.push(`${describe(ing)}: backend Service ${svc?.name} does not exist`);
          continue;
        }
        const ok = (target.spec.ports ?? []).some((p: any) =>
          svc.port?.name ? p.name === svc.port.name : p.port === svc.port?.number,
        );
        if (!ok) problems.push(`${describe(ing)}: Service ${svc.name} has no port ${JSON.stringify(svc.port)}`);
      }
    }
  }

  for (const w of objects) {
    const pod = podSpecOf(w);
    if (!pod) continue;
    const claimsFromTemplates = new Set((w.spec?.volumeClaimTemplates ?? []).map((t: any) => t.metadata?.name));
    const volumes = new Set<string>([...(pod.volumes ?? []).map((v: any) => v.name), ...claimsFromTemplates]);
    for (const v of pod.volumes ?? []) {
      if (v.configMap && !named("ConfigMap", v.configMap.name))
        problems.push(`${describe(w)}: ConfigMap ${v.configMap.name} does not exist`);
      if (v.persistentVolumeClaim && !named("PersistentVolumeClaim", v.persistentVolumeClaim.claimName)) {
        problems.push(`${describe(w)}: PersistentVolumeClaim ${v.persistentVolumeClaim.claimName} does not exist`);
      }
    }
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      for (const m of c.volumeMounts ?? []) {
        if (!volumes.has(m.name)) problems.push(`${describe(w)}: container ${c.name} mounts unknown volume ${m.name}`);
      }
    }
  }

  for (const np of byKind("NetworkPolicy")) {
    const sel = np.spec?.podSelector ?? {};
    const empty = !Object.keys(sel.matchLabels ?? {}).length && !(sel.matchExpressions ?? []).length;
    if (!empty && !pods.some((p) => selects(sel, p.labels)))
      problems.push(`${describe(np)}: podSelector matches no pod`);
    for (const dir of ["ingress", "egress"] as const) {
      for (const rule of np.spec?.[dir] ?? []) {
        for (const peer of [...(rule.from ?? []), ...(rule.to ?? [])]) {
          // Peers in other namespaces (ingress controller, DNS, operators) are outside this render.
          if (!peer.podSelector || peer.namespaceSelector) continue;
          if (!pods.some((p) => selects(peer.podSelector, p.labels))) {
            problems.push(`${describe(np)}: ${dir} peer ${JSON.stringify(peer.podSelector)} matches no pod`);
          }
        }
      }
    }
  }
  return problems;
}
