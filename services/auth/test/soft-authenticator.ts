import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";

// A software WebAuthn authenticator (ES256, "none" attestation, discoverable credentials) so the
// happy path runs without a browser: what a platform authenticator would answer, built by hand.

type Cbor = number | string | Uint8Array | Cbor[] | Map<Cbor, Cbor> | { [k: string]: Cbor };

function head(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 256) return Buffer.from([(major << 5) | 24, n]);
  const b = Buffer.alloc(3);
  b[0] = (major << 5) | 25;
  b.writeUInt16BE(n, 1);
  return b;
}

/** Minimal CBOR (RFC 8949) encoder: small ints, byte and text strings, arrays, maps. */
export function cbor(v: Cbor): Buffer {
  if (typeof v === "number") return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === "string") {
    const b = Buffer.from(v, "utf8");
    return Buffer.concat([head(3, b.length), b]);
  }
  if (v instanceof Uint8Array) return Buffer.concat([head(2, v.length), v]);
  if (Array.isArray(v)) return Buffer.concat([head(4, v.length), ...v.map(cbor)]);
  const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
  return Buffer.concat([head(5, entries.length), ...entries.flatMap(([k, x]) => [cbor(k), cbor(x)])]);
}

const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest();
const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");

interface Credential {
  id: Buffer;
  privateKey: KeyObject;
  rpId: string;
  userHandle: string;
  counter: number;
}

/** Flags: user present (0x01), user verified (0x04), attested credential data (0x40). */
const UP = 0x01;
const UP_UV = 0x05;
const AT = 0x40;

export function softAuthenticator(origin: string) {
  const credentials: Credential[] = [];

  const authData = (rpId: string, flags: number, counter: number, attested?: Buffer) => {
    const c = Buffer.alloc(4);
    c.writeUInt32BE(counter);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), c, attested ?? Buffer.alloc(0)]);
  };
  const clientData = (type: string, challenge: string) =>
    Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));

  return {
    credentials,
    /** navigator.credentials.create() + toJSON(), for PublicKeyCredentialCreationOptionsJSON. */
    create(options: { challenge: string; rp: { id: string }; user: { id: string } }, reuseId?: Buffer) {
      const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      const jwk = publicKey.export({ format: "jwk" });
      const coseKey = new Map<Cbor, Cbor>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x!, "base64url")],
        [-3, Buffer.from(jwk.y!, "base64url")],
      ]);
      // reuseId: the answer of an authenticator that ignores excludeCredentials.
      const id = reuseId ?? randomBytes(16);
      const len = Buffer.alloc(2);
      len.writeUInt16BE(id.length);
      const attested = Buffer.concat([Buffer.alloc(16), len, id, cbor(coseKey)]);
      const cred: Credential = { id, privateKey, rpId: options.rp.id, userHandle: options.user.id, counter: 0 };
      credentials.push(cred);
      const attestationObject = cbor({
        fmt: "none",
        attStmt: {},
        authData: authData(cred.rpId, UP_UV | AT, 0, attested),
      });
      return {
        id: b64u(id),
        rawId: b64u(id),
        type: "public-key",
        clientExtensionResults: {},
        response: {
          clientDataJSON: b64u(clientData("webauthn.create", options.challenge)),
          attestationObject: b64u(attestationObject),
          transports: ["internal"],
        },
      };
    },
    /** navigator.credentials.get() + toJSON() with a chosen credential (discoverable sign-in). */
    get(options: { challenge: string }, cred: Credential = credentials[0]!, opts: { userVerified?: boolean } = {}) {
      cred.counter += 1;
      // A security key without a PIN asserts presence only (UP, no UV).
      const data = authData(cred.rpId, opts.userVerified === false ? UP : UP_UV, cred.counter);
      const cd = clientData("webauthn.get", options.challenge);
      const signature = sign("sha256", Buffer.concat([data, sha256(cd)]), cred.privateKey);
      return {
        id: b64u(cred.id),
        rawId: b64u(cred.id),
        type: "public-key",
        clientExtensionResults: {},
        response: {
          clientDataJSON: b64u(cd),
          authenticatorData: b64u(data),
          signature: b64u(signature),
          userHandle: cred.userHandle,
        },
      };
    },
  };
}
