// autocannon ships no types (and @types/autocannon is not a dependency): the part the benchmarks use.
declare module "autocannon" {
  interface Options {
    url: string;
    headers?: Record<string, string>;
    connections?: number;
    /** Seconds. */
    duration?: number;
  }
  interface Stats {
    average: number;
    p50: number;
    p99: number;
  }
  interface Result {
    requests: Stats;
    latency: Stats;
    errors: number;
    non2xx: number;
  }
  export default function autocannon(opts: Options): Promise<Result>;
}
