import type { Provider } from "../types.js";
import { directoryProvider } from "./directory.js";
import { execProvider } from "./exec.js";
import { fileProvider } from "./file.js";
import { groupProvider } from "./group.js";
import { packageProvider } from "./package.js";
import { serviceProvider } from "./service.js";
import { symlinkProvider } from "./symlink.js";
import { userProvider } from "./user.js";

/** Every resource type this agent enforces, by the `type` of a StateResource. */
export function defaultProviders(): Record<string, Provider> {
  return {
    file: fileProvider(),
    directory: directoryProvider(),
    symlink: symlinkProvider(),
    exec: execProvider(),
    package: packageProvider(),
    service: serviceProvider(),
    user: userProvider(),
    group: groupProvider(),
  };
}
