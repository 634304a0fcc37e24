/**
 * The names of the system resource types (`sysctl`, `apt_repository`, `yum_repository`,
 * `systemd_unit`). Each becomes part of a file name on the agent, so the module schema checks the
 * literal at upload and the agent checks the rendered value again: both import these rules.
 * Messages are predicates ("must be …") read after the field's name.
 */

/** A kernel parameter as sysctl(8) names it: dot-separated words (`net.ipv4.ip_forward`). */
export const SYSCTL_NAME_RE = /^[a-z0-9_][a-z0-9_-]*(\.[a-z0-9_][a-z0-9_-]*)+$/i;
export const SYSCTL_NAME_RULE =
  "must be a kernel parameter such as net.ipv4.ip_forward (dot-separated words of letters, digits, '_' or '-')";

/**
 * A repository's file name stem (`/etc/apt/sources.list.d/<name>.sources`,
 * `/etc/yum.repos.d/<name>.repo`, and its key file). apt ignores files whose names hold other
 * characters (run-parts rules), and a yum section name must not hold spaces or brackets.
 */
export const REPOSITORY_NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
export const REPOSITORY_NAME_RULE =
  "must be 1-64 characters of A-Z, a-z, 0-9, '_', '.' or '-', starting with a letter, digit or '_'";

/** The unit types a unit file may define; the suffix says which, as systemd requires. */
export const SYSTEMD_UNIT_SUFFIXES = [
  "service",
  "socket",
  "timer",
  "path",
  "mount",
  "automount",
  "target",
  "slice",
] as const;
/** systemd's own unit name grammar (unit-name.c): at most 255 characters, one '@' for templates. */
export const SYSTEMD_UNIT_RE = new RegExp(
  `^[A-Za-z0-9:_.\\\\-]+(@[A-Za-z0-9:_.\\\\-]*)?\\.(${SYSTEMD_UNIT_SUFFIXES.join("|")})$`,
);
export const SYSTEMD_UNIT_RULE = `must be a unit file name such as web.service (letters, digits, ':', '_', '.', '-', '\\\\', at most one '@', ending .${SYSTEMD_UNIT_SUFFIXES.join("/.")})`;
export const isSystemdUnitName = (s: string) => s.length <= 255 && SYSTEMD_UNIT_RE.test(s) && !s.startsWith("-");

/** A repository's signing key as a module ships it: one ASCII-armored OpenPGP public key block. */
export const ARMORED_PUBLIC_KEY_RE =
  /^\s*-----BEGIN PGP PUBLIC KEY BLOCK-----[\s\S]+-----END PGP PUBLIC KEY BLOCK-----\s*$/;
export const ARMORED_PUBLIC_KEY_RULE =
  "must be an ASCII-armored OpenPGP public key (-----BEGIN PGP PUBLIC KEY BLOCK----- …), e.g. from gpg --armor --export";
