import grpc from "@grpc/grpc-js";
const def = { push: { path: "/x.X/Push", requestStream: true, responseStream: true, requestSerialize: (b) => b, requestDeserialize: (b) => b, responseSerialize: (b) => b, responseDeserialize: (b) => b } };
const widen = process.argv[2] === "wide";
const server = new grpc.Server();
let got = 0, t0 = 0;
const done = new Promise((resolve) => {
  server.addService(def, { push(call) { call.on("data", (b) => { got += b.length; if (got >= 50 * 1024 * 1024) resolve(); }); } });
});
const port = await new Promise((r) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => r(p)));
if (widen) {
  // reach into node's http2 servers grpc-js created
  for (const [s] of server.http2Servers ?? []) s.on("session", (sess) => { sess.setLocalWindowSize(16 << 20); sess.settings({ initialWindowSize: 4 << 20 }); });
}
const Client = grpc.makeGenericClientConstructor(def);
const c = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), widen ? { "grpc-node.flow_control_window": 16 << 20 } : {});
const call = c.push();
const chunk = Buffer.alloc(64 * 1024, 120);
t0 = performance.now();
(async () => { for (let i = 0; i < 800; i++) { if (!call.write(chunk)) await new Promise((r) => call.once("drain", r)); } })();
await done;
console.log(widen ? "wide" : "default", ((50) / ((performance.now() - t0) / 1000)).toFixed(1), "MiB/s");
process.exit(0);
