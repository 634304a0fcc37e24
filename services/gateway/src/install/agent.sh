#!/bin/sh
# orch-agent installer, served by the orch gateway at /install/agent.sh (docs/agent-install.md).
#
#   curl -fsSL @@BASE_URL@@/install/agent.sh | sudo sh -s -- --token <join token>
#
# Downloads the orch-agent package for this machine from the server that served this script,
# verifies the release manifest's Ed25519 signature with the public key below and the package's
# SHA-256 and size against the manifest, installs it (dpkg or tar), writes /etc/orch-agent/agent.env
# and /etc/orch-agent/release.pub, and starts the orch-agent service when systemd runs.
# Nothing is installed unless every check passed.
#
# The gateway fills in the @@…@@ placeholders (services/gateway/src/routes/install-script.ts); the
# template itself is a valid script that shellcheck lints.
set -eu

BASE_URL='@@BASE_URL@@'
SERVER='@@SERVER@@'
FINGERPRINT='@@FINGERPRINT@@'
INSECURE='@@INSECURE@@'
LATEST_VERSION='@@VERSION@@'
RELEASE_PUB='@@RELEASE_PUB@@'

ENV_KEYS='ORCH_AGENT_SERVER|ORCH_AGENT_SERVER_FINGERPRINT|ORCH_AGENT_INSECURE|ORCH_AGENT_PACKAGES_URL|ORCH_AGENT_RELEASE_KEY'

say() { printf 'orch-agent install: %s\n' "$*"; }
die() {
  printf 'orch-agent install: error: %s\n' "$*" >&2
  exit 1
}

usage() {
  cat <<EOF
Usage: agent.sh [options]   (as root; e.g. curl -fsSL $BASE_URL/install/agent.sh | sudo sh -s -- --token T)

  --token T         join token (ojt_...): the agent is approved at once with the token's tags
  --version V       install version V instead of the latest ($LATEST_VERSION)
  --server H:P      agent link address (default $SERVER)
  --package KIND    deb or tar (default: deb when dpkg is present, else tar)
  --no-start        install and configure, but do not start the service
  --help            this text

Environment: ORCH_INSTALL_ROOT=DIR installs under DIR instead of / (tar packages only; for tests).
EOF
}

# Prints the package manager's install hint for the named commands.
install_hint() {
  if command -v apt-get >/dev/null 2>&1; then
    echo "apt-get install -y $*"
  elif command -v dnf >/dev/null 2>&1; then
    echo "dnf install -y $*"
  elif command -v yum >/dev/null 2>&1; then
    echo "yum install -y $*"
  elif command -v apk >/dev/null 2>&1; then
    echo "apk add $*"
  elif command -v zypper >/dev/null 2>&1; then
    echo "zypper install -y $*"
  else
    echo "install $* with the system's package manager"
  fi
}

# fetch URL FILE: downloads with curl, else wget; fails on HTTP errors.
fetch() {
  if [ "$DOWNLOADER" = curl ]; then
    curl -fsSL --retry 2 -o "$2" "$1" || die "download failed: $1"
  else
    wget -q -O "$2" "$1" || die "download failed: $1"
  fi
}

# manifest_field LINE NAME: the value of "NAME":"value" or "NAME":number on one manifest line.
manifest_field() {
  printf '%s\n' "$1" | sed -n "s/.*\"$2\" *: *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p"
}

main() {
  token=''
  version=''
  server=''
  kind=''
  start=yes
  while [ $# -gt 0 ]; do
    case "$1" in
      --token) [ $# -ge 2 ] || die "--token needs a value"; token=$2; shift 2 ;;
      --token=*) token=${1#--token=}; shift ;;
      --version) [ $# -ge 2 ] || die "--version needs a value"; version=$2; shift 2 ;;
      --version=*) version=${1#--version=}; shift ;;
      --server) [ $# -ge 2 ] || die "--server needs a value"; server=$2; shift 2 ;;
      --server=*) server=${1#--server=}; shift ;;
      --package) [ $# -ge 2 ] || die "--package needs a value"; kind=$2; shift 2 ;;
      --package=*) kind=${1#--package=}; shift ;;
      --no-start) start=no; shift ;;
      -h | --help) usage; exit 0 ;;
      *) usage >&2; die "unknown option: $1" ;;
    esac
  done

  # Values that end up in agent.env or in URLs: refuse anything with spaces, quotes or slashes.
  case "$token" in
    '') ;;
    ojt_*.*) case "$token" in *[!A-Za-z0-9_.-]*) die "--token: not a join token (ojt_<id>.<secret>)" ;; esac ;;
    *) die "--token: not a join token (ojt_<id>.<secret>)" ;;
  esac
  [ -n "$version" ] || version=$LATEST_VERSION
  case "$version" in
    '' | *[!0-9A-Za-z.-]* | .* | *..*) die "--version: not a version like 1.2.3: $version" ;;
  esac
  [ -n "$server" ] || server=$SERVER
  case "$server" in
    '' | *[!]0-9A-Za-z.:_[-]*) die "--server: expected host:port, got: $server" ;;
  esac
  case "$kind" in
    '' | deb | tar) ;;
    *) die "--package: deb or tar, got: $kind" ;;
  esac

  root=${ORCH_INSTALL_ROOT:-}
  if [ -n "$root" ]; then
    case "$root" in /*) ;; *) die "ORCH_INSTALL_ROOT must be an absolute path" ;; esac
    [ "$kind" != deb ] || die "ORCH_INSTALL_ROOT works with tar packages only (dpkg installs into /)"
    kind=tar
    mkdir -p "$root" || die "cannot create ORCH_INSTALL_ROOT $root"
    root=${root%/}
  elif [ "$(id -u)" != 0 ]; then
    die "run as root (e.g. curl -fsSL $BASE_URL/install/agent.sh | sudo sh -s -- ...)"
  fi

  case "$(uname -m)" in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "unsupported architecture $(uname -m): orch-agent packages exist for x86_64 (amd64) and aarch64 (arm64)" ;;
  esac
  if [ -z "$kind" ]; then
    if command -v dpkg >/dev/null 2>&1; then kind=deb; else kind=tar; fi
  fi

  # Everything needed, checked before anything is downloaded or written.
  missing=''
  if command -v curl >/dev/null 2>&1; then
    DOWNLOADER=curl
  elif command -v wget >/dev/null 2>&1; then
    DOWNLOADER=wget
  else
    DOWNLOADER=''
    missing="$missing curl"
  fi
  for c in openssl sha256sum base64 mktemp tar; do
    command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
  done
  if [ "$kind" = deb ]; then command -v dpkg >/dev/null 2>&1 || missing="$missing dpkg"; fi
  if [ -n "$missing" ]; then
    die "missing:$missing (curl or wget; sha256sum and base64 are in coreutils) — install with: $(install_hint "$missing")"
  fi
  case "$(openssl version 2>/dev/null)" in
    "OpenSSL 0."* | "OpenSSL 1."*) die "OpenSSL 3.0 or newer is needed to verify Ed25519 signatures ($(openssl version))" ;;
  esac

  tmp=$(mktemp -d "${TMPDIR:-/tmp}/orch-agent-install.XXXXXX") || die "cannot create a temporary directory"
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 1' HUP INT TERM

  printf '%s\n' "$RELEASE_PUB" >"$tmp/release.pub"
  rel="$BASE_URL/install/releases/$version"
  fetch "$rel/manifest.json" "$tmp/manifest.json"
  fetch "$rel/manifest.json.sig" "$tmp/manifest.json.sig"
  base64 -d <"$tmp/manifest.json.sig" >"$tmp/sig.bin" 2>/dev/null || die "signature refused: manifest.json.sig is not base64"
  if ! openssl pkeyutl -verify -pubin -inkey "$tmp/release.pub" -rawin \
    -in "$tmp/manifest.json" -sigfile "$tmp/sig.bin" >/dev/null 2>&1; then
    die "signature refused: the manifest of $version is not signed by this server's release key; nothing installed"
  fi
  # A validly signed manifest of another version (a stale cache, a proxy, a swapped directory) is
  # still not the one asked for: installing it would leave a different version than was reported.
  signed_version=$(manifest_field "$(grep -E '^ *"version" *:' "$tmp/manifest.json" | head -n 1)" version)
  [ "$signed_version" = "$version" ] ||
    die "version mismatch: asked for $version, the signed manifest is of ${signed_version:-no version}; nothing installed"
  say "manifest of $version: signature verified"

  # One package per line (formatReleaseManifest); the signature covers these bytes.
  line=$(grep -E "\"kind\" *: *\"$kind\"" "$tmp/manifest.json" | grep -E "\"arch\" *: *\"$arch\"" | head -n 1 || true)
  [ -n "$line" ] || die "release $version has no $kind package for $arch"
  file=$(manifest_field "$line" file)
  sha=$(manifest_field "$line" sha256)
  size=$(manifest_field "$line" size)
  case "$file" in '' | */* | .*) die "manifest of $version: bad package name" ;; esac
  case "$size" in '' | *[!0-9]*) die "manifest of $version: bad package size" ;; esac

  say "downloading $file"
  fetch "$rel/$file" "$tmp/$file"
  got_size=$(wc -c <"$tmp/$file" | tr -d ' ')
  [ "$got_size" = "$size" ] || die "size mismatch for $file: $got_size bytes, manifest says $size; nothing installed"
  got_sha=$(sha256sum "$tmp/$file" | cut -d ' ' -f 1)
  [ "$got_sha" = "$sha" ] || die "checksum mismatch for $file: sha256 $got_sha, manifest says $sha; nothing installed"
  say "$file: size and sha256 verified"

  # Configuration first, so a service the package starts already has it.
  conf="$root/etc/orch-agent"
  mkdir -p "$conf"
  chmod 0755 "$conf"
  cp "$tmp/release.pub" "$conf/release.pub.new"
  chmod 0644 "$conf/release.pub.new"
  mv -f "$conf/release.pub.new" "$conf/release.pub"

  env_file="$conf/agent.env"
  keys=$ENV_KEYS
  [ -z "$token" ] || keys="$keys|ORCH_AGENT_JOIN_TOKEN"
  (
    umask 077
    # Lines of an existing agent.env that this script does not manage stay (operator additions,
    # and the join token when no new one is given).
    if [ -f "$env_file" ]; then grep -v -E "^($keys)=" "$env_file" || true; fi
    echo "ORCH_AGENT_SERVER=$server"
    if [ "$INSECURE" = true ]; then
      echo "ORCH_AGENT_INSECURE=true"
    else
      echo "ORCH_AGENT_SERVER_FINGERPRINT=$FINGERPRINT"
    fi
    [ -z "$token" ] || echo "ORCH_AGENT_JOIN_TOKEN=$token"
    echo "ORCH_AGENT_PACKAGES_URL=$BASE_URL/install"
    echo "ORCH_AGENT_RELEASE_KEY=/etc/orch-agent/release.pub"
  ) >"$env_file.new"
  chmod 0600 "$env_file.new"
  mv -f "$env_file.new" "$env_file"
  say "wrote $env_file (server $server)"

  if [ "$kind" = deb ]; then
    dpkg -i "$tmp/$file" || die "dpkg -i $file failed"
  else
    # GNU tar would replace a /lib -> usr/lib symlink by a directory without this option.
    keep=''
    if tar --help 2>/dev/null | grep -q -- --keep-directory-symlink; then keep=--keep-directory-symlink; fi
    # shellcheck disable=SC2086 # $keep is one option or nothing
    tar $keep -xzf "$tmp/$file" -C "${root:-/}" || die "extracting $file failed"
    mkdir -p "$root/var/lib/orch-agent"
    chmod 0700 "$root/var/lib/orch-agent"
  fi
  say "installed orch-agent $version ($kind, $arch) into $root/opt/orch-agent"

  if [ "$start" = no ]; then
    say "not started (--no-start); start it with: systemctl enable --now orch-agent"
  elif [ -z "$root" ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
    systemctl enable orch-agent || die "systemctl enable orch-agent failed"
    # restart, not start: a re-run with a new token or server must reach a running agent.
    systemctl restart orch-agent || die "systemctl restart orch-agent failed (journalctl -u orch-agent)"
    say "started: systemctl status orch-agent; logs: journalctl -u orch-agent"
  else
    say "systemd is not running here; start the agent with:"
    say "  set -a; . /etc/orch-agent/agent.env; set +a; /opt/orch-agent/current/bin/orch-agent"
  fi
}

main "$@"
