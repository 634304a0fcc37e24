import { useEffect, useRef } from "react";

/**
 * Performance marks for the plan view budget (bench/console.ts): all results in hand
 * (`plan:data`) → painted (`plan:painted`), measured as `plan:view`. `rendererReady`: the diff
 * renderer is loaded (the paint waits for it).
 */
export function usePlanViewMarks(planInHand: boolean, rendererReady: boolean): void {
  const marked = useRef(false);
  if (planInHand && !marked.current) {
    marked.current = true;
    performance.mark("plan:data");
  }
  const painted = useRef(false);
  useEffect(() => {
    if (!planInHand || !rendererReady || painted.current) return;
    painted.current = true;
    const frame = requestAnimationFrame(() => {
      performance.mark("plan:painted");
      performance.measure("plan:view", "plan:data", "plan:painted");
    });
    return () => cancelAnimationFrame(frame);
  }, [planInHand, rendererReady]);
}
