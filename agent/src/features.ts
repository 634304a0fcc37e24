import { blobsFeature } from "./blobs/feature.js";
import { commandsFeature } from "./commands/feature.js";
import type { Feature } from "./runtime.js";
import { controlFeature } from "./control.js";
import { stateFeature } from "./state/feature.js";
import { terminalFeature } from "./terminal/feature.js";
import { upgradeFeature } from "./upgrade/feature.js";

/** Every agent-side feature, one line each (state providers and the terminal add theirs). */
export const features: Feature[] = [
  controlFeature,
  stateFeature,
  blobsFeature,
  commandsFeature,
  terminalFeature,
  upgradeFeature,
];
