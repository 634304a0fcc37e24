import t from "tap";
import { classifyAddress, isCidr, isPublicAddress, parseNetwork, type AddressReason } from "../src/addresses.js";

// Every IPv6 transition form of loopback/private space, the documentation ranges, and the ranges the old hand-kept
// list covered. Each row: address, expected reason, and the IPv4 it decodes to (transition forms).
const cases: Array<[string, AddressReason, string?]> = [
  // IPv4
  ["8.8.8.8", "public"],
  ["93.184.216.34", "public"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "unspecified"],
  ["127.0.0.1", "loopback"],
  ["127.9.9.9", "loopback"],
  ["10.1.2.3", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["172.32.0.1", "public"],
  ["192.168.1.1", "private"],
  ["169.254.1.1", "link_local"],
  ["169.254.169.254", "metadata"],
  ["100.64.0.1", "cgnat"],
  ["100.127.255.255", "cgnat"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["255.255.255.255", "broadcast"],
  ["240.0.0.1", "reserved"],
  ["192.0.0.8", "reserved"],
  ["192.0.2.1", "documentation"],
  ["198.51.100.7", "documentation"],
  ["203.0.113.200", "documentation"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.255", "benchmarking"],
  // IPv6, plain
  ["2606:4700:4700::1111", "public"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["[::1]", "loopback"],
  ["fd12:3456::1", "private"],
  ["fc00::1", "private"],
  ["fe80::1", "link_local"],
  ["fe80::1%eth0", "link_local"],
  ["fec0::1", "site_local"],
  ["feff:ffff::1", "site_local"],
  ["ff02::1", "multicast"],
  ["ff0e::1", "multicast"],
  ["2001:db8::1", "documentation"],
  ["2001:db8:ffff::1", "documentation"],
  ["3fff::1", "documentation"],
  ["2001:2::1", "benchmarking"],
  ["100::1", "reserved"], // discard-only
  ["4000::1", "reserved"], // outside 2000::/3
  ["fd00:ec2::254", "metadata"],
  // IPv4-mapped and SIIT
  ["::ffff:127.0.0.1", "loopback", "127.0.0.1"],
  ["::ffff:7f00:1", "loopback", "127.0.0.1"],
  ["::ffff:a9fe:a9fe", "metadata", "169.254.169.254"],
  ["::ffff:10.0.0.1", "private", "10.0.0.1"],
  ["::ffff:8.8.8.8", "public", "8.8.8.8"],
  ["::ffff:0:7f00:1", "loopback", "127.0.0.1"],
  ["::ffff:0:a00:1", "private", "10.0.0.1"],
  // IPv4-compatible
  ["::127.0.0.1", "loopback", "127.0.0.1"],
  ["::7f00:1", "loopback", "127.0.0.1"],
  ["::a9fe:a9fe", "metadata", "169.254.169.254"],
  ["::c0a8:101", "private", "192.168.1.1"],
  // 6to4
  ["2002:7f00:1::", "loopback", "127.0.0.1"],
  ["2002:a00:1::1", "private", "10.0.0.1"],
  ["2002:c000:201::1", "documentation", "192.0.2.1"],
  ["2002:808:808::1", "public", "8.8.8.8"],
  // NAT64 well-known and local-use
  ["64:ff9b::7f00:1", "loopback", "127.0.0.1"],
  ["64:ff9b::127.0.0.1", "loopback", "127.0.0.1"],
  ["64:ff9b::a9fe:a9fe", "metadata", "169.254.169.254"],
  ["64:ff9b::808:808", "public", "8.8.8.8"],
  ["64:ff9b:1::7f00:1", "loopback", "127.0.0.1"],
  ["64:ff9b:1::a00:1", "private", "10.0.0.1"],
  ["64:ff9b:1::808:808", "reserved", "8.8.8.8"], // local-use prefix: never public
  // Teredo: server 65.54.227.120, client obfuscated (bits inverted)
  ["2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback", "127.0.0.1"], // client ~7fff... = 127.0.0.1
  ["2001:0:4136:e378:8000:63bf:f5ff:fffe", "private", "10.0.0.1"],
  ["2001:0:4136:e378:8000:63bf:f7f7:f7f7", "public", "8.8.8.8"],
  ["2001:0:a00:1:8000:63bf:f7f7:f7f7", "private", "10.0.0.1"], // a private Teredo server
];

t.test("classification table", async (t) => {
  for (const [addr, reason, embedded] of cases) {
    const c = classifyAddress(addr);
    t.ok(c, `${addr} is an address`);
    t.equal(c?.reason, reason, `${addr} → ${reason}`);
    t.equal(c?.public, reason === "public", `${addr} public=${reason === "public"}`);
    if (embedded) t.equal(c?.embedded, embedded, `${addr} carries ${embedded}`);
    t.equal(isPublicAddress(addr), reason === "public");
  }
});

t.test("non-addresses are not classified (and never public)", async (t) => {
  for (const s of [
    "",
    "localhost",
    "example.com",
    "127.1",
    "0x7f000001",
    "2130706433",
    "1.2.3.4.5",
    ":::",
    "::1/128",
  ]) {
    t.equal(classifyAddress(s), undefined, `${JSON.stringify(s)} is not an address`);
    t.equal(isPublicAddress(s), false);
  }
});

t.test("networks", async (t) => {
  t.ok(isCidr("127.0.0.0/8"));
  t.ok(isCidr("fd00::/8"));
  t.notOk(isCidr("127.0.0.1"));
  t.notOk(isCidr("127.0.0.0/33"));
  t.notOk(isCidr("host/8"));
  t.throws(() => parseNetwork("10.0.0.0"), /CIDR/);
  const lo = parseNetwork("127.0.0.0/8");
  t.ok(lo.contains("127.0.0.1"));
  t.ok(lo.contains("::ffff:127.0.0.1"), "IPv4-mapped form of a member");
  t.notOk(lo.contains("128.0.0.1"));
  t.notOk(lo.contains("::1"));
  t.notOk(lo.contains("not-an-ip"));
  const v6 = parseNetwork("fd00:1::/32");
  t.ok(v6.contains("fd00:1::5"));
  t.notOk(v6.contains("fd00:2::5"));
  t.notOk(v6.contains("10.0.0.1"));
});
