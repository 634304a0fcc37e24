// Baseline for `npm run bench -- gateway`: one bare fastify process running the auth service's
// list query directly against Postgres (no NATS, no auth, no validation).
import Fastify from "fastify";
import pg from "pg";

const [url, portArg] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: 10, options: "-c search_path=auth" });
const app = Fastify();
app.get("/api/v1/operators", async () => {
  const r = await pool.query(
    "SELECT id, name, public_key, role, active, created_at, created_by FROM operators WHERE id > $1 ORDER BY id LIMIT $2",
    ["", 51],
  );
  const rows = r.rows.slice(0, 50);
  return { operators: rows, has_more: r.rows.length > 50, next_cursor: r.rows.length > 50 ? rows.at(-1).id : null };
});
await app.listen({ port: Number(portArg), host: "127.0.0.1" });
process.send?.("ready");
